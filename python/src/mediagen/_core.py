"""What the sync and the async client share: paths, names, the request pieces, the wait bookkeeping.
Nothing here talks to the gateway."""

from __future__ import annotations

import json
import os
import re
import uuid
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Generic, Literal, TypeVar, Union
from urllib.parse import quote, urlencode

import httpx
from typing_extensions import TypedDict

from ._errors import MediaGenError
from .models import (
    DirectUploadCreate,
    ImageJob,
    ReplaceActorJob,
    TalkingActorJob,
    UploadMimeType,
    VideoJob,
)

T = TypeVar("T")
J = TypeVar("J", bound=Mapping[str, Any])


class ModelDeprecationWarning(FutureWarning):
    """A create or dry run of a deprecated model: the gateway answered with a Deprecation header (RFC
    9745). The message is its X-Mediagen-Warning: why, and which model to use instead. Python shows
    each distinct warning once; `warnings.simplefilter("error", ModelDeprecationWarning)` makes it fatal."""


def warn_if_deprecated(res: httpx.Response) -> None:
    """Issues a ModelDeprecationWarning when a 2xx answer says the requested model is deprecated."""
    deprecation = res.headers.get("deprecation")
    if deprecation is None:
        return
    message = res.headers.get("x-mediagen-warning") or f"the requested model is deprecated (Deprecation: {deprecation})"
    warnings.warn(message, ModelDeprecationWarning, stacklevel=2)

JobKind = Literal["images", "videos", "replace-actors", "talking-actors"]
"""The four job kinds, named as in their paths."""
AnyJob = Union[ImageJob, VideoJob, ReplaceActorJob, TalkingActorJob]
FileInput = Union[str, "os.PathLike[str]", bytes, IO[bytes]]
"""What an upload takes: a path, the bytes, or a binary file object."""
ProgressCallback = Callable[[Any], None]


class Page(TypedDict, Generic[T]):
    """A list answer: one page of records and the cursor of the next (None at the end)."""

    data: list[T]
    next_cursor: str | None


@dataclass(frozen=True)
class JobPaths:
    create: str
    base: str
    id_prefix: str


JOB_PATHS: dict[JobKind, JobPaths] = {
    "images": JobPaths("/v1/images/generate", "/v1/images", "img_"),
    "videos": JobPaths("/v1/videos/generate", "/v1/videos", "vid_"),
    "replace-actors": JobPaths("/v1/replace-actors/generations", "/v1/replace-actors/generations", "rpl_"),
    "talking-actors": JobPaths("/v1/talking-actors/generate", "/v1/talking-actors", "tlk_"),
}

TERMINAL: frozenset[str] = frozenset({"completed", "failed"})

# The client method serving each operation of the OpenAPI document (dotted path on a client, the
# same on MediaGenClient and AsyncMediaGenClient). A test fails when the document has one this lacks.
OPERATION_METHODS: dict[str, str] = {
    "get_projects": "projects.list",
    "get_actors": "actors.list",
    "get_voices": "voices.list",
    "get_models": "models.list",
    "get_queue": "queue.get",
    "get_audit_events": "audit_events.list",
    "get_usage": "usage.get",
    "get_budgets": "budgets.list",
    "get_balance": "balance.get",
    "put_balance_alerts": "balance.set_alerts",
    "post_api_keys": "api_keys.create",
    "get_api_keys": "api_keys.list",
    "delete_api_keys_by_id": "api_keys.revoke",
    "post_pipelines": "pipelines.create",
    "get_pipelines": "pipelines.list",
    "get_pipelines_by_id": "pipelines.get",
    "post_pipelines_by_id_cancel": "pipelines.cancel",
    "post_pipelines_by_id_resume": "pipelines.resume",
    "get_pipelines_by_id_receipt": "pipelines.receipt",
    "get_pipelines_by_id_events": "pipelines.events",
    "post_batches": "batches.create",
    "get_batches": "batches.list",
    "get_batches_by_id": "batches.get",
    "post_batches_by_id_cancel": "batches.cancel",
    "post_batches_by_id_retry": "batches.retry",
    "get_batches_by_id_manifest": "batches.manifest",
    "post_bulk_actions": "bulk_actions.create",
    "get_bulk_actions": "bulk_actions.list",
    "get_bulk_actions_by_id": "bulk_actions.get",
    "get_jobs": "jobs.list",
    "get_jobs_by_id_timeline": "jobs.timeline",
    "get_images_by_id_timeline": "jobs.timeline",
    "get_videos_by_id_timeline": "jobs.timeline",
    "get_replace_actors_generations_by_id_timeline": "jobs.timeline",
    "get_talking_actors_by_id_timeline": "jobs.timeline",
    "post_upload": "upload_file",
    "post_upload_from_url": "upload_from_url",
    "post_uploads": "uploads.create",
    "post_uploads_by_id_complete": "uploads.complete",
    "get_uploads_by_id": "uploads.get",
    "delete_uploads_by_id": "uploads.delete",
    "get_webhook_deliveries": "webhook_deliveries.list",
    "get_webhook_deliveries_by_id": "webhook_deliveries.get",
    "post_webhook_deliveries_by_id_redeliver": "webhook_deliveries.redeliver",
    "post_webhook_endpoints": "webhook_endpoints.create",
    "get_webhook_endpoints": "webhook_endpoints.list",
    "get_webhook_endpoints_by_id": "webhook_endpoints.get",
    "post_webhook_endpoints_by_id": "webhook_endpoints.update",
    "delete_webhook_endpoints_by_id": "webhook_endpoints.delete",
    "post_webhook_endpoints_by_id_rotate_secret": "webhook_endpoints.rotate_secret",
    "post_webhook_endpoints_by_id_test": "webhook_endpoints.test",
    "get_events": "events.list",
    "get_events_stream": "events.stream",
    "get_healthz": "health",
    "get_readyz": "ready",
    "get_openapi_json": "openapi",
    "post_images_generate": "images.generate",
    "get_images": "images.list",
    "get_images_by_id": "images.get",
    "get_images_by_id_url": "images.url",
    "post_images_by_id_cancel": "images.cancel",
    "delete_images_by_id": "images.delete_outputs",
    "get_images_by_id_events": "images.events",
    "post_videos_generate": "videos.generate",
    "get_videos": "videos.list",
    "get_videos_by_id": "videos.get",
    "get_videos_by_id_url": "videos.url",
    "post_videos_by_id_cancel": "videos.cancel",
    "delete_videos_by_id": "videos.delete_outputs",
    "get_videos_by_id_events": "videos.events",
    "post_replace_actors_generations": "replace_actors.generate",
    "get_replace_actors_generations": "replace_actors.list",
    "get_replace_actors_generations_by_id": "replace_actors.get",
    "get_replace_actors_generations_by_id_url": "replace_actors.url",
    "post_replace_actors_generations_by_id_cancel": "replace_actors.cancel",
    "delete_replace_actors_generations_by_id": "replace_actors.delete_outputs",
    "get_replace_actors_generations_by_id_events": "replace_actors.events",
    "post_talking_actors_generate": "talking_actors.generate",
    "get_talking_actors": "talking_actors.list",
    "get_talking_actors_by_id": "talking_actors.get",
    "get_talking_actors_by_id_url": "talking_actors.url",
    "post_talking_actors_by_id_cancel": "talking_actors.cancel",
    "delete_talking_actors_by_id": "talking_actors.delete_outputs",
    "get_talking_actors_by_id_events": "talking_actors.events",
}

_MIME_TYPES: dict[str, UploadMimeType] = {
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "png": "image/png",
    "webp": "image/webp",
    "mp4": "video/mp4",
    "m4v": "video/mp4",
    "mov": "video/quicktime",
    "webm": "video/webm",
}
_EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "video/mp4": ".mp4", "video/webm": ".webm", "video/quicktime": ".mov"}


def kind_of_job_id(job_id: str) -> JobKind | None:
    """The job kind an id belongs to, from its prefix (`img_...` → images), or None."""
    for kind, p in JOB_PATHS.items():
        if job_id.startswith(p.id_prefix):
            return kind
    return None


def mime_type_of(name: str) -> UploadMimeType | None:
    """The MIME type of an upload from a file name's extension (direct uploads must declare it)."""
    m = re.search(r"\.([a-z0-9]+)$", name, re.IGNORECASE)
    return _MIME_TYPES.get(m.group(1).lower()) if m else None


def job_ref(job: str | Mapping[str, Any]) -> tuple[JobKind, str]:
    """(kind, id) of a job id or a job record (every create answer and job record carries its id)."""
    job_id = job if isinstance(job, str) else job.get("id")
    kind = kind_of_job_id(job_id) if isinstance(job_id, str) else None
    if kind is None or not isinstance(job_id, str):
        raise MediaGenError(status=0, code="invalid_job_id", message=f"{job_id!r} is not a job id (img_, vid_, rpl_ or tlk_ ...)")
    return kind, job_id


def normalize_base_url(base_url: str) -> str:
    return re.sub(r"/v1$", "", base_url.rstrip("/"))


def query_string(params: Mapping[str, Any]) -> str:
    """A list repeats its name (tag=a&tag=b); a dict is sent as name[key]=value (metadata filters)."""
    pairs: list[tuple[str, str]] = []
    for k, v in params.items():
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            pairs.extend((k, str(item)) for item in v)
        elif isinstance(v, Mapping):
            pairs.extend((f"{k}[{key}]", str(item)) for key, item in v.items())
        else:
            pairs.append((k, str(v).lower() if isinstance(v, bool) else str(v)))
    return f"?{urlencode(pairs)}" if pairs else ""


def quote_id(job_id: str) -> str:
    return quote(job_id, safe="")


def new_idempotency_key() -> str:
    return str(uuid.uuid4())


def config_error(code: str, message: str) -> MediaGenError:
    return MediaGenError(status=0, code=code, message=message)


def parse_json(res: httpx.Response, what: str) -> Any:
    if not res.content:
        return None
    try:
        return json.loads(res.content)
    except ValueError:
        raise MediaGenError(
            status=res.status_code,
            code="invalid_response",
            message=f"the gateway answered {what} with a body that is not JSON",
            request_id=res.headers.get("x-request-id"),
        ) from None


def event_job(data: str) -> Any:
    """The job record of a `status` event (its data is the record, or `{ data: record }`)."""
    parsed = json.loads(data)
    if isinstance(parsed, dict) and isinstance(parsed.get("data"), dict):
        return parsed["data"]
    return parsed


def not_an_event_stream(res: httpx.Response, kind: str) -> MediaGenError:
    return MediaGenError(
        status=res.status_code,
        code="invalid_response",
        message=f"the gateway answered {kind} events with {res.headers.get('content-type', 'no body')}, not an event stream",
        request_id=res.headers.get("x-request-id"),
    )


def failed_job_error(kind: str, job: Mapping[str, Any]) -> MediaGenError:
    err = job.get("error") or {}
    return MediaGenError(
        status=409,
        code=str(err.get("code") or "generation_failed"),
        message=f"{kind} job {job.get('id')} failed: {err.get('message') or 'no reason given'}",
        body=job,
    )


def storage_error(res: httpx.Response, upload_id: str) -> MediaGenError:
    # Storage answers S3 XML (<Code>EntityTooLarge</Code>...), not the API's error envelope.
    m = re.search(r"<Code>([^<]+)</Code>", res.text)
    code = m.group(1) if m else f"http_{res.status_code}"
    return MediaGenError(status=res.status_code, code="storage_refused", message=f"storage refused upload {upload_id}: {code}", body=res.text)


@dataclass
class ProgressTracker:
    """Reports each new snapshot of a job (status, progress, error) once to the caller's callback."""

    on_progress: ProgressCallback | None
    last: str = ""

    def seen(self, job: Mapping[str, Any]) -> bool:
        key = json.dumps([job.get("status"), job.get("progress"), job.get("error")], sort_keys=True)
        if key == self.last:
            return False
        self.last = key
        if self.on_progress is not None:
            self.on_progress(job)
        return True


@dataclass(frozen=True)
class JobEvent(Generic[J]):
    """One `status` event of a job's event stream."""

    id: str | None
    """The event id (the job's change counter), for `last_event_id` on reconnect."""
    job: J


@dataclass(frozen=True)
class PipelineEvent:
    """One `status` event of a pipeline's event stream."""

    id: str | None
    """The event id (the pipeline's change counter), for `last_event_id` on reconnect."""
    pipeline: dict[str, Any]


@dataclass
class PipelineTracker:
    """Reports each new state of a pipeline once to the caller's callback (its statuses, progress,
    outputs or charges moved; its updated_at and presigned URLs move on their own)."""

    on_update: Callable[[dict[str, Any]], None] | None
    last: str = ""

    def seen(self, p: Mapping[str, Any]) -> bool:
        steps = [[s.get("status"), s.get("job_id"), s.get("progress"), len(s.get("outputs") or []), s.get("charged"), s.get("refunded")] for s in p.get("steps", [])]
        key = json.dumps([p.get("status"), p.get("error"), p.get("charged"), steps], sort_keys=True)
        if key == self.last:
            return False
        self.last = key
        if self.on_update is not None:
            self.on_update(dict(p))
        return True


@dataclass(frozen=True)
class WaitResult(Generic[J]):
    """A completed job and its output URLs."""

    job: J
    url: str
    """The first (or only) output URL."""
    urls: list[str] = field(default_factory=list)
    """Every output URL (several for an image job with count > 1)."""


@dataclass
class UploadSource:
    """An upload's bytes, readable again for each attempt (a 429 is retried with the same bytes)."""

    filename: str
    size: int
    path: Path | None = None
    content: bytes | None = None

    def open(self) -> IO[bytes] | bytes:
        if self.path is not None:
            return self.path.open("rb")
        assert self.content is not None
        return self.content


def upload_source(file: FileInput, filename: str | None) -> UploadSource:
    if isinstance(file, (str, os.PathLike)):
        path = Path(file)
        try:
            if not path.is_file():
                raise FileNotFoundError(f"no such file: {path}") if not path.exists() else IsADirectoryError(f"not a file: {path}")
            size = path.stat().st_size
        except OSError as e:
            code = "file_not_found" if isinstance(e, FileNotFoundError) else "file_unreadable"
            raise MediaGenError(status=0, code=code, message=f"cannot read {path}: {e}") from e
        return UploadSource(filename=filename or path.name, size=size, path=path)
    if isinstance(file, (bytes, bytearray, memoryview)):
        content = bytes(file)
    else:
        # A file object is read once (uploads are capped at 20 MB), so a retry sends the same bytes.
        content = file.read()
        if filename is None:
            name = getattr(file, "name", None)
            if isinstance(name, str):
                filename = os.path.basename(name)
    return UploadSource(filename=filename or "upload", size=len(content), content=content)


def direct_upload_body(project_id: str, source: UploadSource, mime_type: UploadMimeType | None) -> DirectUploadCreate:
    mime = mime_type or mime_type_of(source.filename)
    if mime is None:
        raise MediaGenError(
            status=0,
            code="unknown_mime_type",
            message=f"cannot tell the type of {source.filename}: pass mime_type (image/jpeg, image/png, image/webp, video/mp4, video/quicktime or video/webm)",
        )
    return {"project_id": project_id, "name": source.filename, "mime_type": mime, "size": source.size}


def is_directory_target(out: str | os.PathLike[str]) -> bool:
    out_str = os.fspath(out)
    return out_str.endswith(("/", os.sep)) or Path(out_str).is_dir()


def output_path(out: str | os.PathLike[str], is_dir: bool, job_id: str, index: int, url: str, content_type: str | None) -> Path:
    """Where download_outputs writes output `index` (0-based): in a directory, `<id>-<n><ext>`;
    otherwise `out` itself for the first output and `name-2.png`, ... for the next ones."""
    out_str = os.fspath(out)
    ext = os.path.splitext(httpx.URL(url).path)[1] or _EXTENSIONS.get((content_type or "").split(";")[0].strip(), "")
    if is_dir:
        return Path(out_str) / f"{job_id}-{index + 1}{ext}"
    if index == 0:
        return Path(out_str)
    stem, own_ext = os.path.splitext(out_str)
    return Path(f"{stem}-{index + 1}{own_ext or ext}")
