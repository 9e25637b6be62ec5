"""The synchronous client (httpx.Client), generated from the asynchronous one (_async_client.py)."""

# Generated from _async_client.py by python/scripts/generate_sync_client.py: edit _async_client.py and rerun it.

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeVar, cast, overload

import httpx
from httpx_sse import EventSource

from . import _core
from ._resources import (
    follow_status_events,
    _Actors,
    _ApiKeys,
    _AuditEvents,
    _Balance,
    _Batches,
    _BulkActions,
    _Budgets,
    _Events,
    _Images,
    _JobResource,
    _Jobs,
    _Models,
    _Pipelines,
    _Queue,
    _Projects,
    _ReplaceActors,
    _TalkingActors,
    _Uploads,
    _Usage,
    _Videos,
    _Voices,
    _WebhookDeliveries,
    _WebhookEndpoints,
)
from ._core import (
    JOB_PATHS,
    TERMINAL,
    AnyJob,
    FileInput,
    JobEvent,
    JobKind,
    Page,
    ProgressCallback,
    ProgressTracker,
    WaitResult,
)
from ._errors import MediaGenError, error_from_response
from .models import (
    DirectUploadRecord,
    FileUpload,
    Health,
    Readiness,
    UploadMimeType,
    UrlResult,
)

T = TypeVar("T")
J = TypeVar("J", bound=Mapping[str, Any])
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
# Seconds an event stream may stay silent: four of the gateway's 15 s pings, whatever the client's
# own timeout (httpx's default of 5 s would cut every quiet stream).
STREAM_READ_TIMEOUT = 60.0


class MediaGenClient:
    """A client of the Media Generation API: one method per operation, errors as MediaGenError,
    429 retried after `retry_after_ms`, an Idempotency-Key on every create and upload.

    Use it as a context manager (or call close()) to release its connections."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str,
        max_retries: int = 2,
        max_retry_delay: float = 60.0,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        http_client: httpx.Client | None = None,
    ) -> None:
        """
        api_key: the workspace API key (`mg_live_...`).
        base_url: the gateway, e.g. http://127.0.0.1:8080 (with or without a trailing /v1).
        max_retries: how many times a 429 is retried after its `retry_after_ms` (0 disables).
        max_retry_delay: seconds; a 429 asking for a longer wait fails at once.
        timeout: seconds (or an httpx.Timeout) per request; event streams wait up to 60 s for
            their next event (the gateway sends a ping every 15 s).
        http_client: an httpx.Client of your own (proxies, transports, event hooks); not closed by close().
        """
        if not api_key:
            raise _core.config_error("missing_api_key", "an API key is required (MEDIAGEN_API_KEY)")
        if not base_url:
            raise _core.config_error("missing_base_url", "a base URL is required (MEDIAGEN_BASE_URL)")
        self.base_url = _core.normalize_base_url(base_url)
        self._api_key = api_key
        self.max_retries = max_retries
        self.max_retry_delay = max_retry_delay
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout)
        # Set once the gateway answered 404 for an event stream: poll from then on.
        self._events_unsupported = False

        self.projects = _Projects(self, "/v1/projects")
        self.actors = _Actors(self, "/v1/actors")
        self.voices = _Voices(self, "/v1/voices")
        self.models = _Models(self)
        self.queue = _Queue(self)
        self.audit_events = _AuditEvents(self, "/v1/audit-events")
        self.webhook_deliveries = _WebhookDeliveries(self)
        self.webhook_endpoints = _WebhookEndpoints(self)
        self.usage = _Usage(self)
        self.budgets = _Budgets(self)
        self.balance = _Balance(self)
        self.api_keys = _ApiKeys(self)
        self.events = _Events(self)
        self.pipelines = _Pipelines(self)
        self.batches = _Batches(self)
        self.bulk_actions = _BulkActions(self)
        self.jobs = _Jobs(self)
        self.uploads = _Uploads(self)
        self.images = _Images(self, "images")
        self.videos = _Videos(self, "videos")
        self.replace_actors = _ReplaceActors(self, "replace-actors")
        self.talking_actors = _TalkingActors(self, "talking-actors")

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> MediaGenClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------------ requests

    def send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        files: Callable[[], dict[str, Any]] | None = None,
        data: Mapping[str, str] | None = None,
        idempotent: bool = False,
        idempotency_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        accept: str = "application/json",
        stream: bool = False,
        timeout: float | None = None,
    ) -> httpx.Response:
        """One API call with bearer auth; a 429 is retried after its `retry_after_ms` (the same
        Idempotency-Key on every attempt); any other non-2xx raises MediaGenError. Returns the 2xx
        response (unread when `stream`: close it)."""
        h = {**(headers or {}), "authorization": f"Bearer {self._api_key}", "accept": accept}
        if idempotent:
            h["idempotency-key"] = idempotency_key or _core.new_idempotency_key()
        network_retried = False
        attempt = 0
        while True:
            try:
                request = self._http.build_request(
                    method,
                    f"{self.base_url}{path}",
                    headers=h,
                    json=json,
                    files=files() if files else None,
                    data=data,
                    timeout=httpx.USE_CLIENT_DEFAULT if timeout is None else httpx.Timeout(timeout, connect=min(timeout, 10.0)),
                )
                res = self._http.send(request, stream=stream)
            except httpx.TransportError as e:
                # A kept-alive connection the server closed between two polls: a read is safe to repeat once.
                if method == "GET" and not network_retried and not isinstance(e, httpx.TimeoutException):
                    network_retried = True
                    continue
                raise MediaGenError(status=0, code="network_error", message=f"could not reach {self.base_url}: {e!r}") from e
            if res.is_success:
                _core.warn_if_deprecated(res)
                return res
            res.read()
            res.close()
            err = error_from_response(res)
            delay_ms = err.retry_after_ms if err.retry_after_ms is not None else 1000
            if res.status_code == 429 and attempt < self.max_retries and delay_ms <= self.max_retry_delay * 1000:
                attempt += 1
                time.sleep(delay_ms / 1000)
                continue
            raise err

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """send(), then the answer's JSON body."""
        res = self.send(method, path, **kwargs)
        return _core.parse_json(res, f"{method} {path}")

    def _data(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.request(method, path, **kwargs)["data"]

    # ------------------------------------------------------------------ discovery and service

    def paginate(self, list_fn: Callable[..., Page[T]], *, limit: int = 100, **filters: Any) -> Iterator[T]:
        """Every item of a list endpoint (`mg.actors.list`, `mg.jobs.list`, ...), following next_cursor."""
        cursor: str | None = None
        while True:
            page = list_fn(limit=limit, **filters, **({"cursor": cursor} if cursor else {}))
            yield from page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def health(self) -> Health:
        """GET /healthz: the gateway process is up."""
        return cast(Health, self.request("GET", "/healthz"))

    def ready(self) -> Readiness:
        """GET /readyz: Postgres reachable, and Temporal and storage (`degraded` names one that is down); else 503, a MediaGenError whose body names the part."""
        return cast(Readiness, self.request("GET", "/readyz"))

    def openapi(self) -> dict[str, Any]:
        """GET /v1/openapi.json: the OpenAPI 3.1 document the models were generated from."""
        return cast(dict[str, Any], self.request("GET", "/v1/openapi.json"))

    # ------------------------------------------------------------------ uploads

    def upload_file(self, file: FileInput, *, project_id: str, filename: str | None = None, idempotency_key: str | None = None) -> FileUpload:
        """POST /v1/upload (multipart, through the gateway) of a path, bytes or a binary file object."""
        source = _core.upload_source(file, filename)
        opened: list[IO[bytes]] = []

        def form() -> dict[str, Any]:
            # A path is opened anew for each attempt (a 429 retry sends the file again).
            content = source.open()
            if not isinstance(content, bytes):
                opened.append(content)
            return {"file": (source.filename, content)}

        try:
            return cast(
                FileUpload,
                self._data("POST", "/v1/upload", files=form, data={"project_id": project_id}, idempotent=True, idempotency_key=idempotency_key),
            )
        finally:
            for f in opened:
                f.close()

    def upload_from_url(self, url: str, *, project_id: str, idempotency_key: str | None = None) -> FileUpload:
        """POST /v1/upload-from-url: the gateway fetches a public HTTPS image or video."""
        body = {"url": url, "project_id": project_id}
        return cast(FileUpload, self._data("POST", "/v1/upload-from-url", json=body, idempotent=True, idempotency_key=idempotency_key))

    def upload_direct(
        self,
        file: FileInput,
        *,
        project_id: str,
        filename: str | None = None,
        mime_type: UploadMimeType | None = None,
        idempotency_key: str | None = None,
    ) -> DirectUploadRecord:
        """A direct upload in one call: create it, send the bytes straight to storage with the
        presigned POST (never through a gateway), complete it. The MIME type is guessed from the file
        name unless given; storage refuses any other size or type, and completion checks the bytes."""
        source = _core.upload_source(file, filename)
        created = self.uploads.create(idempotency_key=idempotency_key, **_core.direct_upload_body(project_id, source, mime_type))
        post = created["upload"]
        try:
            # No Authorization header: the presigned policy is the storage's only credential.
            content = source.open()
            try:
                res = self._http.post(post["url"], data=post["fields"], files={"file": (source.filename, content, created["mime_type"])})
            finally:
                if not isinstance(content, bytes):
                    content.close()
        except httpx.TransportError as e:
            raise MediaGenError(status=0, code="network_error", message=f"could not reach storage at {httpx.URL(post['url']).host}: {e!r}") from e
        if not res.is_success:
            raise _core.storage_error(res, created["id"])
        return self.uploads.complete(created["id"])

    def download_outputs(self, urls: list[str], out: str | Path, *, job_id: str) -> list[Path]:
        """Downloads each output URL. `out` is a directory (existing, or ending in /) whose files are
        named `<id>-<n><ext>`, or the file for a single output (`name-2.png`, ... for more).
        Returns the paths written."""
        is_dir = _core.is_directory_target(out)
        written: list[Path] = []
        for i, url in enumerate(urls):
            try:
                with self._http.stream("GET", url) as res:
                    if not res.is_success:
                        raise MediaGenError(status=res.status_code, code="download_failed", message=f"downloading output {i + 1} failed: HTTP {res.status_code}")
                    path = _core.output_path(out, is_dir, job_id, i, url, res.headers.get("content-type"))
                    path.parent.mkdir(parents=True, exist_ok=True)
                    with path.open("wb") as f:
                        for chunk in res.iter_bytes():
                            f.write(chunk)
            except httpx.TransportError as e:
                raise MediaGenError(status=0, code="network_error", message=f"downloading output {i + 1} failed: {e!r}") from e
            written.append(path)
        return written

    # ------------------------------------------------------------------ jobs

    def _kind(self, kind: JobKind) -> _JobResource[Any, Any]:
        resources: dict[JobKind, _JobResource[Any, Any]] = {"images": self.images, "videos": self.videos, "replace-actors": self.replace_actors, "talking-actors": self.talking_actors}
        return resources[kind]

    def get_job(self, job: str | Mapping[str, Any]) -> AnyJob:
        """The status of any job: an id or a record (its id's prefix tells the kind)."""
        kind, job_id = _core.job_ref(job)
        return cast(AnyJob, self._kind(kind).get(job_id))

    def job_url(self, job: str | Mapping[str, Any]) -> UrlResult:
        kind, job_id = _core.job_ref(job)
        return self._kind(kind).url(job_id)

    def job_events(self, job: str | Mapping[str, Any], *, last_event_id: str | None = None, timeout: float | None = None) -> Generator[JobEvent[Any], None, None]:
        """One connection to GET /v1/{kind}/{id}/events: a JobEvent for each `status` event (the job
        record as GET answers it), until the stream ends (after the terminal event, or when the
        connection drops: pass the last `id` as `last_event_id` to resume without replays). Raises
        MediaGenError 404 where the gateway has no event stream. `timeout`: seconds to wait for the
        next event (default 60 s; the gateway sends a ping every 15 s)."""
        kind, job_id = _core.job_ref(job)
        headers = {"last-event-id": last_event_id} if last_event_id else {}
        res = self.send("GET", f"{JOB_PATHS[kind].base}/{_core.quote_id(job_id)}/events", headers=headers, accept="text/event-stream", stream=True, timeout=STREAM_READ_TIMEOUT if timeout is None else timeout)
        try:
            if "text/event-stream" not in res.headers.get("content-type", ""):
                raise _core.not_an_event_stream(res, kind)
            for sse in EventSource(res).iter_sse():
                if sse.event == "status":
                    yield JobEvent(id=sse.id or None, job=_core.event_job(sse.data))
        finally:
            res.close()

    @overload
    def wait_for_job(
        self, job: J, *, on_progress: ProgressCallback | None = ..., poll_interval: float = ..., max_poll_interval: float = ..., events: bool = ..., timeout: float | None = ...
    ) -> WaitResult[J]: ...
    @overload
    def wait_for_job(
        self, job: str, *, on_progress: ProgressCallback | None = ..., poll_interval: float = ..., max_poll_interval: float = ..., events: bool = ..., timeout: float | None = ...
    ) -> WaitResult[AnyJob]: ...
    def wait_for_job(
        self,
        job: str | Mapping[str, Any],
        *,
        on_progress: ProgressCallback | None = None,
        poll_interval: float = 0.5,
        max_poll_interval: float = 5.0,
        events: bool = True,
        timeout: float | None = None,
    ) -> WaitResult[Any]:
        """Returns once the job is `completed`, with the job and its output URLs; raises the job's
        MediaGenError (`generation_failed` or `canceled`, status 409) once it is `failed`. Follows the
        live event stream where the gateway offers it (resuming with Last-Event-ID when it drops),
        else polls, the interval growing ×1.5 up to `max_poll_interval` while nothing changes.
        `timeout` (seconds) raises MediaGenError `timeout` when the job is still running then."""
        kind, job_id = _core.job_ref(job)
        deadline = None if timeout is None else time.monotonic() + timeout
        tracker = ProgressTracker(on_progress)
        current: Mapping[str, Any] = self._kind(kind).get(job_id)
        tracker.seen(current)
        if current["status"] not in TERMINAL and events and not self._events_unsupported:
            latest, unsupported = follow_status_events(
                lambda last_event_id, read_timeout: self.job_events(job_id, last_event_id=last_event_id, timeout=read_timeout),
                lambda ev: (ev.id, cast(Mapping[str, Any], ev.job)),
                tracker.seen,
                lambda: _check_deadline(deadline, kind, job_id),
                deadline,
            )
            self._events_unsupported = unsupported
            current = latest or current
        interval = poll_interval
        while current["status"] not in TERMINAL:
            _check_deadline(deadline, kind, job_id)
            time.sleep(interval if deadline is None else max(0.0, min(interval, deadline - time.monotonic())))
            current = self._kind(kind).get(job_id)
            interval = poll_interval if tracker.seen(current) else min(max_poll_interval, interval * 1.5)
        if current["status"] == "failed":
            raise _core.failed_job_error(kind, current)
        r = self._kind(kind).url(job_id)
        return WaitResult(job=current, url=r["url"], urls=r.get("urls") or [r["url"]])


def _check_deadline(deadline: float | None, kind: str, job_id: str) -> None:
    if deadline is not None and time.monotonic() >= deadline:
        raise MediaGenError(status=0, code="timeout", message=f"{kind} job {job_id} did not finish in time")

