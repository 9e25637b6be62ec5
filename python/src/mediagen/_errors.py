"""One error class for every failure: the API's `{ error: { code, message } }` plus the HTTP status,
the gateway's request id and, for 429, how long to wait."""

from __future__ import annotations

import json
from typing import Any

import httpx


class MediaGenError(Exception):
    """A failed call: an error answer of the API, a failed job, or no answer at all (status 0)."""

    status: int
    """HTTP status; 0 when no answer came (network failure) or the client refused before sending."""
    code: str
    """The API's stable error code (`invalid_request`, `insufficient_credits`, ...), or `network_error`."""
    message: str
    retry_after_ms: int | None
    """Milliseconds to wait before retrying (429 `retry_after_ms`, else the Retry-After header)."""
    request_id: str | None
    """The gateway's X-Request-Id, to quote when reporting a problem."""
    body: Any
    """The whole error body as answered (e.g. `status` of a 409 `not_ready`), or the failed job."""

    def __init__(
        self,
        *,
        status: int,
        code: str,
        message: str,
        retry_after_ms: int | None = None,
        request_id: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after_ms = retry_after_ms
        self.request_id = request_id
        self.body = body

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"MediaGenError(status={self.status!r}, code={self.code!r}, message={self.message!r}, request_id={self.request_id!r})"


def error_from_response(res: httpx.Response) -> MediaGenError:
    """The MediaGenError of a non-2xx answer whose body has been read."""
    try:
        body: Any = json.loads(res.text) if res.content else None
    except ValueError:
        body = None
    # The API's error shape, read defensively: any other body leaves the fallbacks below.
    shaped: dict[str, Any] = body if isinstance(body, dict) else {}
    error: dict[str, Any] = shaped["error"] if isinstance(shaped.get("error"), dict) else {}
    retry_after_ms: int | None = None
    if isinstance(shaped.get("retry_after_ms"), (int, float)) and not isinstance(shaped.get("retry_after_ms"), bool):
        retry_after_ms = int(shaped["retry_after_ms"])
    elif "retry-after" in res.headers:
        try:
            retry_after_ms = int(float(res.headers["retry-after"]) * 1000)
        except ValueError:
            retry_after_ms = None
    code = error.get("code") if isinstance(error.get("code"), str) else f"http_{res.status_code}"
    message = error.get("message") if isinstance(error.get("message"), str) else f"HTTP {res.status_code} {res.reason_phrase}".strip()
    return MediaGenError(
        status=res.status_code,
        code=str(code),
        message=str(message),
        retry_after_ms=retry_after_ms,
        request_id=res.headers.get("x-request-id"),
        body=body,
    )
