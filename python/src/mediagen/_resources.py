"""The resources of MediaGenClient (mg.images, mg.jobs, mg.uploads, ...): one method per operation."""

# Generated from _async_resources.py by python/scripts/generate_sync_client.py: edit _async_resources.py and rerun it.

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import closing
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import httpx
from httpx_sse import EventSource
from typing_extensions import Unpack

from . import _core
from ._core import JOB_PATHS, TERMINAL, AnyJob, JobEvent, JobKind, Page, PipelineEvent, PipelineTracker
from ._errors import MediaGenError
from .models import (
    Actor,
    ActorsQuery,
    AuditEvent,
    AuditEventsQuery,
    ApiKey,
    ApiKeyCreated,
    Balance,
    BalanceAlerts,
    Budget,
    DirectUpload,
    DirectUploadCreate,
    DirectUploadRecord,
    DryRunQuote,
    ImageCreate,
    ImageJob,
    ImageStepBody,
    JobListItem,
    JobListQuery,
    JobTimeline,
    ModelInfo,
    PipelineCreate,
    Project,
    ProjectsQuery,
    QueueEntry,
    QueueQuery,
    ReplaceActorCreate,
    ReplaceActorCreated,
    ReplaceActorJob,
    ReplaceActorStepBody,
    TalkingActorCreate,
    TalkingActorCreated,
    TalkingActorJob,
    TalkingActorStepBody,
    UrlResult,
    UsageQuery,
    UsageReport,
    VideoCreate,
    VideoJob,
    VideoStepBody,
    Voice,
    VoicesQuery,
    WebhookDeliveriesQuery,
    WebhookDelivery,
    WorkspaceEvent,
    WorkspaceEventsQuery,
)

if TYPE_CHECKING:
    from ._client import MediaGenClient

# Seconds an event stream may stay silent: four of the gateway's 15 s pings (as the client's job streams).
_STREAM_READ_TIMEOUT = 60.0

Item = TypeVar("Item")


class _Lister(Generic[Item]):
    def __init__(self, client: MediaGenClient, path: str) -> None:
        self._client = client
        self._path = path

    def _list(self, query: Mapping[str, Any]) -> Page[Item]:
        return cast(Page[Item], self._client.request("GET", f"{self._path}{_core.query_string(query)}"))


class _Projects(_Lister[Project]):
    def list(self, **query: Unpack[ProjectsQuery]) -> Page[Project]:
        """GET /v1/projects: one page (`limit` 1-100, `cursor` a page's next_cursor)."""
        return self._list(query)


class _Actors(_Lister[Actor]):
    def list(self, **query: Unpack[ActorsQuery]) -> Page[Actor]:
        """GET /v1/actors: one page, filtered by gender, age, skin_tone, is_pro."""
        return self._list(query)


class _Voices(_Lister[Voice]):
    def list(self, **query: Unpack[VoicesQuery]) -> Page[Voice]:
        """GET /v1/voices: one page."""
        return self._list(query)


class _AuditEvents(_Lister[AuditEvent]):
    def list(self, **query: Unpack[AuditEventsQuery]) -> Page[AuditEvent]:
        """GET /v1/audit-events: the workspace's audit log, newest first; owner keys only (others: 403 owner_key_required)."""
        return self._list(query)


class _Models:
    def __init__(self, client: MediaGenClient) -> None:
        self._client = client

    def list(self) -> Page[ModelInfo]:
        """GET /v1/models: every public model, what it accepts, its price and how this deployment serves it."""
        return cast(Page[ModelInfo], self._client.request("GET", "/v1/models"))


class _Queue:
    def __init__(self, client: MediaGenClient) -> None:
        self._client = client

    def get(self, **query: Unpack[QueueQuery]) -> Page[QueueEntry]:
        """GET /v1/queue: per model and priority, the jobs waiting (this workspace's and everyone's), the recent waits and the estimated wait of a new job."""
        return cast(Page[QueueEntry], self._client.request("GET", f"/v1/queue{_core.query_string(query)}"))


class _WebhookDeliveries:
    """The workspace's webhook events with every attempt, and redelivery of a finished one."""

    def __init__(self, client: MediaGenClient) -> None:
        self._client = client

    def list(self, **query: Unpack[WebhookDeliveriesQuery]) -> Page[WebhookDelivery]:
        """GET /v1/webhook-deliveries: newest first, with each attempt's status code, error class, latency and next retry."""
        return cast(Page[WebhookDelivery], self._client.request("GET", f"/v1/webhook-deliveries{_core.query_string(query)}"))

    def get(self, delivery_id: str) -> WebhookDelivery:
        """GET /v1/webhook-deliveries/{id}: one event (its id is the webhook-id)."""
        return cast(WebhookDelivery, self._client._data("GET", f"/v1/webhook-deliveries/{_core.quote_id(delivery_id)}"))

    def redeliver(self, delivery_id: str) -> WebhookDelivery:
        """POST /v1/webhook-deliveries/{id}/redeliver: sends a finished event again, same webhook-id, signed afresh."""
        return cast(WebhookDelivery, self._client._data("POST", f"/v1/webhook-deliveries/{_core.quote_id(delivery_id)}/redeliver"))


class _WebhookEndpoints:
    """The workspace's webhook endpoints (docs/api/webhook-endpoints.md): changes need an owner key;
    create and rotate_secret answer the signing secret, the only time it is shown."""

    def __init__(self, client: MediaGenClient) -> None:
        self._client = client

    def create(
        self, url: str, event_types: list[str], *, description: str | None = None, enabled: bool | None = None
    ) -> dict[str, Any]:
        """POST /v1/webhook-endpoints: event_types are exact names or job.*, pipeline.*, budget.*, balance.*."""
        body: dict[str, Any] = {"url": url, "event_types": event_types}
        if description is not None:
            body["description"] = description
        if enabled is not None:
            body["enabled"] = enabled
        return cast("dict[str, Any]", self._client._data("POST", "/v1/webhook-endpoints", json=body))

    def list(self) -> list[dict[str, Any]]:
        """GET /v1/webhook-endpoints: every endpoint, oldest first; never a secret."""
        return cast("list[dict[str, Any]]", self._client._data("GET", "/v1/webhook-endpoints"))

    def get(self, endpoint_id: str) -> dict[str, Any]:
        """GET /v1/webhook-endpoints/{id}."""
        return cast("dict[str, Any]", self._client._data("GET", f"/v1/webhook-endpoints/{_core.quote_id(endpoint_id)}"))

    def update(self, endpoint_id: str, **changes: Any) -> dict[str, Any]:
        """POST /v1/webhook-endpoints/{id}: any of url, event_types, description, enabled."""
        path = f"/v1/webhook-endpoints/{_core.quote_id(endpoint_id)}"
        return cast("dict[str, Any]", self._client._data("POST", path, json=changes))

    def delete(self, endpoint_id: str) -> dict[str, Any]:
        """DELETE /v1/webhook-endpoints/{id}."""
        return cast("dict[str, Any]", self._client._data("DELETE", f"/v1/webhook-endpoints/{_core.quote_id(endpoint_id)}"))

    def rotate_secret(self, endpoint_id: str, overlap_seconds: int | None = None) -> dict[str, Any]:
        """POST /v1/webhook-endpoints/{id}/rotate-secret: the old secret keeps signing for overlap_seconds (default a day)."""
        body: dict[str, Any] = {} if overlap_seconds is None else {"overlap_seconds": overlap_seconds}
        path = f"/v1/webhook-endpoints/{_core.quote_id(endpoint_id)}/rotate-secret"
        return cast("dict[str, Any]", self._client._data("POST", path, json=body))

    def test(self, endpoint_id: str) -> dict[str, Any]:
        """POST /v1/webhook-endpoints/{id}/test: a signed webhook.ping through the delivery machinery."""
        path = f"/v1/webhook-endpoints/{_core.quote_id(endpoint_id)}/test"
        return cast("dict[str, Any]", self._client._data("POST", path, json={}))


class _Usage:
    def __init__(self, client: MediaGenClient) -> None:
        self._client = client

    def get(self, **query: Unpack[UsageQuery]) -> UsageReport:
        """GET /v1/usage: credits spent, refunded and net and job counts per UTC day or hour (one page; `totals` covers the range)."""
        return cast(UsageReport, self._client.request("GET", f"/v1/usage{_core.query_string(query)}"))

    def csv(self, **query: Unpack[UsageQuery]) -> str:
        """The whole range as CSV (RFC 4180): every page asked with `Accept: text/csv`, the header row once."""
        out = ""
        cursor: str | None = None
        while True:
            q: dict[str, object] = {**query, **({"cursor": cursor} if cursor else {})}
            res = self._client.send("GET", f"/v1/usage{_core.query_string(q)}", accept="text/csv")
            text = res.text
            # The header row holds no quoted field: it ends at the first line break.
            out += text[text.index("\r\n") + 2 :] if out else text
            cursor = res.headers.get("next-cursor")
            if not cursor:
                return out


class _Events:
    """The workspace's event log (docs/api/events.md): every status move of a job, pipeline events,
    budget alerts and balance.low crossings, numbered per workspace (`seq`) gap-free in commit order.
    Each event's `id` is the `webhook-id` of its webhook delivery."""

    def __init__(self, client: MediaGenClient) -> None:
        self._client = client

    def list(self, **query: Unpack[WorkspaceEventsQuery]) -> Page[WorkspaceEvent]:
        """GET /v1/events: one page after `after` (the last seq seen), oldest first; read on with after=next_after while has_more."""
        return cast(Page[WorkspaceEvent], self._client.request("GET", f"/v1/events{_core.query_string(query)}"))

    def iterate(self, **query: Unpack[WorkspaceEventsQuery]) -> Generator[WorkspaceEvent, None, None]:
        """Every event after `after` (default 0), page by page following `next_after`, until the log is caught up."""
        q: WorkspaceEventsQuery = {**query}
        while True:
            page = cast("dict[str, Any]", self.list(**q))
            for event in page["data"]:
                yield cast(WorkspaceEvent, event)
            if not page["has_more"]:
                return
            q["after"] = int(page["next_after"])

    def stream(
        self, *, last_event_id: str | None = None, after: int | None = None, types: str | None = None, timeout: float | None = None
    ) -> Generator[WorkspaceEvent, None, None]:
        """One connection to GET /v1/events/stream: every event after `last_event_id` (a seq; else `after`),
        oldest first, then each new one as it commits, until the connection drops: pass the last `seq` as
        `last_event_id` to resume, on any gateway replica, without losing or repeating one. `timeout`:
        seconds to wait for the next event (default 60 s; the gateway sends a ping every 15 s)."""
        headers = {"last-event-id": last_event_id} if last_event_id else {}
        query: dict[str, Any] = {"types": types, "after": None if last_event_id else after}
        path = f"/v1/events/stream{_core.query_string({k: v for k, v in query.items() if v is not None})}"
        res = self._client.send("GET", path, headers=headers, accept="text/event-stream", stream=True, timeout=_STREAM_READ_TIMEOUT if timeout is None else timeout)
        try:
            if "text/event-stream" not in res.headers.get("content-type", ""):
                raise _core.not_an_event_stream(res, "workspace")
            for sse in EventSource(res).iter_sse():
                # `caught_up` (no id) marks the end of the backlog; it is not an event of the log.
                if sse.event != "caught_up":
                    yield cast(WorkspaceEvent, json.loads(sse.data))
        finally:
            res.close()


class _Budgets:
    def __init__(self, client: MediaGenClient) -> None:
        self._client = client

    def list(self) -> Page[Budget]:
        """GET /v1/budgets: the workspace's budgets per key and project, with their net spend this period, what is left and when they reset."""
        return cast(Page[Budget], self._client.request("GET", "/v1/budgets"))


class _Balance:
    """The workspace's credits and its low-balance alerts (docs/api/balance.md)."""

    def __init__(self, client: MediaGenClient) -> None:
        self._client = client

    def get(self) -> Balance:
        """GET /v1/balance: available credits, those held by jobs in flight, granted and spent this month, and the low-balance thresholds."""
        return cast(Balance, self._client._data("GET", "/v1/balance"))

    def set_alerts(self, thresholds: list[int], url: str | None = None) -> BalanceAlerts:
        """PUT /v1/balance/alerts (owner keys only): replaces the thresholds (credits) and the URL of their balance.low events; [] turns them off."""
        body: dict[str, Any] = {"thresholds": thresholds}
        if url is not None:
            body["url"] = url
        return cast(BalanceAlerts, self._client._data("PUT", "/v1/balance/alerts", json=body))


class _ApiKeys:
    """The workspace's API keys, their scopes and rules (docs/api/api-keys.md; owner keys with the admin scope)."""

    def __init__(self, client: MediaGenClient) -> None:
        self._client = client

    def create(
        self,
        name: str,
        scopes: list[str],
        *,
        allowed_models: list[str] | None = None,
        allowed_kinds: list[str] | None = None,
        allowed_ips: list[str] | None = None,
        expires_at: str | None = None,
        budget: Mapping[str, Any] | None = None,
    ) -> ApiKeyCreated:
        """POST /v1/api-keys: mints a key with no more than the requesting key; `key` in the answer is its secret, shown once."""
        body: dict[str, Any] = {"name": name, "scopes": scopes}
        for field, value in (
            ("allowed_models", allowed_models),
            ("allowed_kinds", allowed_kinds),
            ("allowed_ips", allowed_ips),
            ("expires_at", expires_at),
            ("budget", dict(budget) if budget is not None else None),
        ):
            if value is not None:
                body[field] = value
        return cast(ApiKeyCreated, self._client._data("POST", "/v1/api-keys", json=body))

    def list(self) -> Page[ApiKey]:
        """GET /v1/api-keys: every key of the workspace with its rules, never a secret."""
        return cast(Page[ApiKey], self._client.request("GET", "/v1/api-keys"))

    def revoke(self, key_id: str) -> ApiKey:
        """DELETE /v1/api-keys/{id}: revokes the key on every gateway at once."""
        return cast(ApiKey, self._client._data("DELETE", f"/v1/api-keys/{_core.quote_id(key_id)}"))


class _Pipelines:
    """Pipelines: several job creates run in order as one durable job (docs/api/pipelines.md)."""

    def __init__(self, client: MediaGenClient) -> None:
        self._client = client
        # Set once the gateway answered 404 for a pipeline's event stream: poll from then on.
        self._events_unsupported = False

    def create(self, body: PipelineCreate, *, dry_run: bool = False) -> dict[str, Any]:
        """POST /v1/pipelines (with an Idempotency-Key); dry_run=True: the quote of every step instead. Each step's body is its kind's step body."""
        path = "/v1/pipelines?dry_run=true" if dry_run else "/v1/pipelines"
        return cast("dict[str, Any]", self._client._data("POST", path, json=dict(body), idempotent=True))

    def get(self, pipeline_id: str) -> dict[str, Any]:
        """GET /v1/pipelines/{id}: its status, and each step's job, progress, outputs and charges."""
        return cast("dict[str, Any]", self._client._data("GET", f"/v1/pipelines/{_core.quote_id(pipeline_id)}"))

    def list(self, **query: Any) -> dict[str, Any]:
        """GET /v1/pipelines: the workspace's pipelines, newest first (limit, cursor, status)."""
        return cast("dict[str, Any]", self._client.request("GET", f"/v1/pipelines{_core.query_string(query)}"))

    def cancel(self, pipeline_id: str) -> dict[str, Any]:
        """POST /v1/pipelines/{id}/cancel: cancels the running step's job; no later step starts."""
        return cast("dict[str, Any]", self._client._data("POST", f"/v1/pipelines/{_core.quote_id(pipeline_id)}/cancel"))

    def resume(
        self, pipeline_id: str, body: ImageStepBody | VideoStepBody | ReplaceActorStepBody | TalkingActorStepBody | None = None
    ) -> dict[str, Any]:
        """POST /v1/pipelines/{id}/resume: runs the failed step again (with `body`, a step body of its kind, as its new body, if given), then the rest."""
        payload: dict[str, Any] = {} if body is None else {"body": dict(body)}
        return cast("dict[str, Any]", self._client._data("POST", f"/v1/pipelines/{_core.quote_id(pipeline_id)}/resume", json=payload))

    def receipt(self, pipeline_id: str) -> dict[str, Any]:
        """GET /v1/pipelines/{id}/receipt: each step's charges and refunds, by job."""
        return cast("dict[str, Any]", self._client._data("GET", f"/v1/pipelines/{_core.quote_id(pipeline_id)}/receipt"))

    def events(self, pipeline_id: str, *, last_event_id: str | None = None, timeout: float | None = None) -> Generator[PipelineEvent, None, None]:
        """One connection to GET /v1/pipelines/{id}/events: a PipelineEvent for each `status` event (the
        record GET answers) until the stream ends (after the event of a completed or failed pipeline, or
        when the connection drops: pass the last `id` as `last_event_id` to resume without replays).
        Raises MediaGenError 404 where the gateway has no such stream. `timeout`: seconds to wait for
        the next event (default 60 s; the gateway sends a ping every 15 s)."""
        headers = {"last-event-id": last_event_id} if last_event_id else {}
        path = f"/v1/pipelines/{_core.quote_id(pipeline_id)}/events"
        res = self._client.send("GET", path, headers=headers, accept="text/event-stream", stream=True, timeout=_STREAM_READ_TIMEOUT if timeout is None else timeout)
        try:
            if "text/event-stream" not in res.headers.get("content-type", ""):
                raise _core.not_an_event_stream(res, "pipeline")
            for sse in EventSource(res).iter_sse():
                if sse.event == "status":
                    yield PipelineEvent(id=sse.id or None, pipeline=_core.event_job(sse.data))
        finally:
            res.close()

    def wait(
        self,
        pipeline_id: str,
        *,
        timeout: float | None = None,
        on_update: Callable[[dict[str, Any]], None] | None = None,
        poll_interval: float = 0.5,
        max_poll_interval: float = 5.0,
        events: bool = True,
    ) -> dict[str, Any]:
        """Returns the pipeline's record once it is `completed` or `failed` (check `status`: a failed one
        names its error and failed step, and may be resumed). Follows the live event stream where the
        gateway offers it (resuming with Last-Event-ID when it drops), else polls GET, the interval
        growing x1.5 up to `max_poll_interval` while nothing changes. `on_update` gets each new state.
        `timeout` (seconds) raises MediaGenError `timeout` when it is still running then."""
        deadline = None if timeout is None else time.monotonic() + timeout
        tracker = PipelineTracker(on_update)
        current = self.get(pipeline_id)
        tracker.seen(current)
        if current["status"] not in TERMINAL and events and not self._events_unsupported:
            latest, unsupported = follow_status_events(
                lambda last_event_id, read_timeout: self.events(pipeline_id, last_event_id=last_event_id, timeout=read_timeout),
                lambda ev: (ev.id, ev.pipeline),
                tracker.seen,
                lambda: _check_deadline(deadline, pipeline_id),
                deadline,
            )
            self._events_unsupported = unsupported
            current = latest or current
        interval = poll_interval
        while current["status"] not in TERMINAL:
            _check_deadline(deadline, pipeline_id)
            time.sleep(interval if deadline is None else max(0.0, min(interval, deadline - time.monotonic())))
            current = self.get(pipeline_id)
            interval = poll_interval if tracker.seen(current) else min(max_poll_interval, interval * 1.5)
        return current


class _Batches:
    """Batches: many job creates submitted as one, each item at priority low (docs/api/batches.md)."""

    def __init__(self, client: MediaGenClient) -> None:
        self._client = client

    def create(self, body: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """POST /v1/batches (with an Idempotency-Key): `items` of {custom_id, kind, body}; dry_run=True: the quote of every item instead."""
        path = "/v1/batches?dry_run=true" if dry_run else "/v1/batches"
        return cast("dict[str, Any]", self._client._data("POST", path, json=dict(body), idempotent=True))

    def get(self, batch_id: str) -> dict[str, Any]:
        """GET /v1/batches/{id}: its status and its items counted by status."""
        return cast("dict[str, Any]", self._client._data("GET", f"/v1/batches/{_core.quote_id(batch_id)}"))

    def list(self, **query: Any) -> dict[str, Any]:
        """GET /v1/batches: the workspace's batches, newest first (limit, cursor, status)."""
        return cast("dict[str, Any]", self._client.request("GET", f"/v1/batches{_core.query_string(query)}"))

    def cancel(self, batch_id: str) -> dict[str, Any]:
        """POST /v1/batches/{id}/cancel: the items not started are canceled, never charged."""
        return cast("dict[str, Any]", self._client._data("POST", f"/v1/batches/{_core.quote_id(batch_id)}/cancel"))

    def retry(self, batch_id: str) -> dict[str, Any]:
        """POST /v1/batches/{id}/retry: the failed items run again, each as a new job."""
        return cast("dict[str, Any]", self._client._data("POST", f"/v1/batches/{_core.quote_id(batch_id)}/retry"))

    def manifest(self, batch_id: str) -> Sequence[dict[str, Any]]:
        """GET /v1/batches/{id}/manifest: one row per item, once every item ended."""
        return cast("Sequence[dict[str, Any]]", self._client._data("GET", f"/v1/batches/{_core.quote_id(batch_id)}/manifest"))

    def wait(self, batch_id: str, *, timeout: float | None = None, poll_interval: float = 1.0, max_poll_interval: float = 10.0) -> dict[str, Any]:
        """Returns the batch's record once it ended (`completed` or `canceled`), polling GET with backoff.
        `timeout` (seconds) raises MediaGenError `timeout` when it is still running then."""
        deadline = None if timeout is None else time.monotonic() + timeout
        last: object = None
        interval = poll_interval
        while True:
            current = self.get(batch_id)
            key = (current["status"], current["counts"])
            moved = key != last
            last = key
            if current["status"] != "running":
                return current
            if deadline is not None and time.monotonic() + interval > deadline:
                raise MediaGenError(status=0, code="timeout", message=f"batch {batch_id} did not end within {timeout} s (it goes on)")
            time.sleep(interval)
            interval = poll_interval if moved else min(max_poll_interval, interval * 1.5)


class _BulkActions:
    """Bulk actions: one cancel, retry or delete over many jobs, by filter or ids (docs/api/bulk-actions.md)."""

    def __init__(self, client: MediaGenClient) -> None:
        self._client = client

    def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST /v1/bulk-actions (with an Idempotency-Key): {action: cancel|retry|delete, filter: {...}} or {action, ids: [...]}; the handle."""
        return cast("dict[str, Any]", self._client._data("POST", "/v1/bulk-actions", json=dict(body), idempotent=True))

    def get(self, bulk_action_id: str) -> dict[str, Any]:
        """GET /v1/bulk-actions/{id}: its status and its jobs counted by outcome."""
        return cast("dict[str, Any]", self._client._data("GET", f"/v1/bulk-actions/{_core.quote_id(bulk_action_id)}"))

    def list(self, **query: Any) -> dict[str, Any]:
        """GET /v1/bulk-actions: the workspace's bulk actions, newest first (limit, cursor)."""
        return cast("dict[str, Any]", self._client.request("GET", f"/v1/bulk-actions{_core.query_string(query)}"))

    def wait(self, bulk_action_id: str, *, timeout: float | None = None, poll_interval: float = 1.0, max_poll_interval: float = 10.0) -> dict[str, Any]:
        """Returns the action's record once it completed, polling GET with backoff.
        `timeout` (seconds) raises MediaGenError `timeout` when it is still running then."""
        deadline = None if timeout is None else time.monotonic() + timeout
        last: object = None
        interval = poll_interval
        while True:
            current = self.get(bulk_action_id)
            key = (current["status"], current["counts"])
            moved = key != last
            last = key
            if current["status"] != "running":
                return current
            if deadline is not None and time.monotonic() + interval > deadline:
                raise MediaGenError(status=0, code="timeout", message=f"bulk action {bulk_action_id} did not complete within {timeout} s (it goes on)")
            time.sleep(interval)
            interval = poll_interval if moved else min(max_poll_interval, interval * 1.5)


E = TypeVar("E")
R = TypeVar("R", bound=Mapping[str, Any])


def follow_status_events(
    open_stream: Callable[[str | None, float | None], Generator[E, None, None]],
    unpack: Callable[[E], tuple[str | None, R]],
    seen: Callable[[R], object],
    check_deadline: Callable[[], None],
    deadline: float | None,
) -> tuple[R | None, bool]:
    """Follows a job's or a pipeline's event stream (`open_stream(last_event_id, read_timeout)`)
    until a terminal status, resuming from the last event id when the stream drops (five tries).
    Returns the last record it saw (None when none) and whether the gateway has no such stream
    (404/405: the caller polls from then on)."""
    last_event_id: str | None = None
    latest: R | None = None
    for reconnects in range(5):
        try:
            read_timeout = None if deadline is None else max(0.01, deadline - time.monotonic())
            # Closed on return too, so the connection is given back at once.
            with closing(open_stream(last_event_id, read_timeout)) as stream:
                for ev in stream:
                    event_id, record = unpack(ev)
                    if event_id is not None:
                        last_event_id = event_id
                    latest = record
                    seen(record)
                    if record["status"] in TERMINAL:
                        return record, False
                    check_deadline()
            # The stream closed before a terminal event (a gateway restart): resume from the last id.
        except MediaGenError as e:
            if e.code == "timeout":
                raise
            # The job or pipeline exists (just read), so 404/405 means this gateway has no event stream.
            if e.status in (404, 405):
                return None, True
            # A body that is not an event stream: poll.
            if e.code == "invalid_response":
                return latest, False
            # A network error or a 503 while the gateway restarts: reconnect after a short pause;
            # polling takes over after that and reports a failure that persists.
        except (httpx.TransportError, httpx.DecodingError):
            pass  # the connection dropped mid-stream: resume below
        check_deadline()
        time.sleep(0.25 * (reconnects + 1))
    return latest, False


def _check_deadline(deadline: float | None, pipeline_id: str) -> None:
    if deadline is not None and time.monotonic() >= deadline:
        raise MediaGenError(status=0, code="timeout", message=f"pipeline {pipeline_id} did not end in time (it goes on)")


class _Jobs:
    def __init__(self, client: MediaGenClient) -> None:
        self._client = client

    def list(self, **query: Unpack[JobListQuery]) -> Page[JobListItem]:
        """GET /v1/jobs: every kind, newest first."""
        return cast(Page[JobListItem], self._client.request("GET", f"/v1/jobs{_core.query_string(query)}"))

    def get(self, job_id: str) -> AnyJob:
        """The status of any job, its kind told by its id."""
        return self._client.get_job(job_id)

    def timeline(self, job_id: str) -> JobTimeline:
        """GET /v1/jobs/{id}/timeline: what happened to the job, in order, with the credits charged and refunded (its receipt)."""
        return cast(JobTimeline, self._client._data("GET", f"/v1/jobs/{_core.quote_id(job_id)}/timeline"))


class _Uploads:
    """Direct uploads: the bytes go straight to storage with a presigned POST, never through a gateway."""

    def __init__(self, client: MediaGenClient) -> None:
        self._client = client

    def create(self, *, idempotency_key: str | None = None, **body: Unpack[DirectUploadCreate]) -> DirectUpload:
        """POST /v1/uploads: a pending upload and the presigned POST for its bytes."""
        return cast(DirectUpload, self._client._data("POST", "/v1/uploads", json=body, idempotent=True, idempotency_key=idempotency_key))

    def complete(self, upload_id: str) -> DirectUploadRecord:
        """POST /v1/uploads/{id}/complete: checks the stored bytes; completed (or 400, failed)."""
        return cast(DirectUploadRecord, self._client._data("POST", f"/v1/uploads/{_core.quote_id(upload_id)}/complete"))

    def get(self, upload_id: str) -> DirectUploadRecord:
        """GET /v1/uploads/{id}: any upload of the workspace, with its status."""
        return cast(DirectUploadRecord, self._client._data("GET", f"/v1/uploads/{_core.quote_id(upload_id)}"))

    def delete(self, upload_id: str) -> DirectUploadRecord:
        """DELETE /v1/uploads/{id}: any upload of the workspace; its link then answers 410 and jobs refuse it. Idempotent."""
        return cast(DirectUploadRecord, self._client._data("DELETE", f"/v1/uploads/{_core.quote_id(upload_id)}"))


JobT = TypeVar("JobT", bound=Mapping[str, Any])
CreateT = TypeVar("CreateT")


class _JobResource(Generic[JobT, CreateT]):
    """Status, URL, cancel, delete, list, quote and events of one job kind."""

    def __init__(self, client: MediaGenClient, kind: JobKind) -> None:
        self._client = client
        self._kind = kind
        self._paths = JOB_PATHS[kind]

    def _at(self, job_id: str, suffix: str = "") -> str:
        return f"{self._paths.base}/{_core.quote_id(job_id)}{suffix}"

    def _create(self, body: Mapping[str, Any], idempotency_key: str | None) -> Any:
        return self._client._data("POST", self._paths.create, json=dict(body), idempotent=True, idempotency_key=idempotency_key)

    def _quote(self, body: Mapping[str, Any]) -> DryRunQuote:
        return cast(DryRunQuote, self._client._data("POST", f"{self._paths.create}?dry_run=true", json=dict(body)))

    def list(self, **query: Unpack[JobListQuery]) -> Page[JobT]:
        """This kind's jobs, newest first (the same filters as jobs.list)."""
        return cast(Page[JobT], self._client.request("GET", f"{self._paths.base}{_core.query_string(query)}"))

    def get(self, job_id: str) -> JobT:
        return cast(JobT, self._client._data("GET", self._at(job_id)))

    def url(self, job_id: str) -> UrlResult:
        """The output URL(s) of a completed job; 409 `not_ready` (body `status`) before."""
        return cast(UrlResult, self._client._data("GET", self._at(job_id, "/url")))

    def cancel(self, job_id: str) -> JobT:
        return cast(JobT, self._client._data("POST", self._at(job_id, "/cancel")))

    def delete_outputs(self, job_id: str) -> JobT:
        """DELETE: removes a finished job's outputs from storage (the record stays; its URL then answers 410)."""
        return cast(JobT, self._client._data("DELETE", self._at(job_id)))

    def events(self, job_id: str, *, last_event_id: str | None = None) -> Generator[JobEvent[JobT], None, None]:
        """GET .../{id}/events (server-sent events): see MediaGenClient.job_events."""
        return cast(Generator[JobEvent[JobT], None, None], self._client.job_events(job_id, last_event_id=last_event_id))


class _Images(_JobResource[ImageJob, ImageCreate]):
    def generate(self, *, idempotency_key: str | None = None, **body: Unpack[ImageCreate]) -> ImageJob:
        """POST /v1/images/generate: the job record, status `pending`."""
        return cast(ImageJob, self._create(body, idempotency_key))

    def quote(self, **body: Unpack[ImageCreate]) -> DryRunQuote:
        """The create with ?dry_run=true: validation and price, nothing created or charged."""
        return self._quote(body)


class _Videos(_JobResource[VideoJob, VideoCreate]):
    def generate(self, *, idempotency_key: str | None = None, **body: Unpack[VideoCreate]) -> VideoJob:
        """POST /v1/videos/generate: the job record, status `pending`."""
        return cast(VideoJob, self._create(body, idempotency_key))

    def quote(self, **body: Unpack[VideoCreate]) -> DryRunQuote:
        """The create with ?dry_run=true: validation and price, nothing created or charged."""
        return self._quote(body)


class _ReplaceActors(_JobResource[ReplaceActorJob, ReplaceActorCreate]):
    def generate(self, *, idempotency_key: str | None = None, **body: Unpack[ReplaceActorCreate]) -> ReplaceActorCreated:
        """POST /v1/replace-actors/generations: image_file_id + video_file_id, or image_url + video_url.
        Answers the job's id and status `pending`."""
        return cast(ReplaceActorCreated, self._create(body, idempotency_key))

    def quote(self, **body: Unpack[ReplaceActorCreate]) -> DryRunQuote:
        """The create with ?dry_run=true: validation and price, nothing created or charged."""
        return self._quote(body)


class _TalkingActors(_JobResource[TalkingActorJob, TalkingActorCreate]):
    def generate(self, *, idempotency_key: str | None = None, **body: Unpack[TalkingActorCreate]) -> TalkingActorCreated:
        """POST /v1/talking-actors/generate: the job's id, the voice it will speak with, status `pending`."""
        return cast(TalkingActorCreated, self._create(body, idempotency_key))

    def quote(self, **body: Unpack[TalkingActorCreate]) -> DryRunQuote:
        """The create with ?dry_run=true: validation and price, nothing created or charged."""
        return self._quote(body)
