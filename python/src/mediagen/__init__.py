"""mediagen: a typed client for the Media Generation API (sync and async, on httpx)."""

from ._async_client import AsyncMediaGenClient
from ._client import MediaGenClient
from ._core import (
    JOB_PATHS,
    OPERATION_METHODS,
    AnyJob,
    FileInput,
    JobEvent,
    JobKind,
    ModelDeprecationWarning,
    Page,
    PipelineEvent,
    WaitResult,
    kind_of_job_id,
    mime_type_of,
)
from ._errors import MediaGenError
from ._webhooks import verify_webhook
from .models import JobStatus, UploadMimeType

__version__ = "0.1.0"

__all__ = [
    "JOB_PATHS",
    "OPERATION_METHODS",
    "AnyJob",
    "AsyncMediaGenClient",
    "FileInput",
    "JobEvent",
    "JobKind",
    "JobStatus",
    "MediaGenClient",
    "MediaGenError",
    "ModelDeprecationWarning",
    "Page",
    "PipelineEvent",
    "UploadMimeType",
    "WaitResult",
    "kind_of_job_id",
    "mime_type_of",
    "verify_webhook",
]
