"""Helpers of the Python client's tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import pytest

from mediagen import MediaGenClient, MediaGenError

T = TypeVar("T")


@dataclass(frozen=True)
class Tenant:
    api_key: str
    project_id: str
    workspace_id: str
    base_url: str


@dataclass
class Recorder:
    """The requests a client sent and the answers it got, through httpx event hooks."""

    requests: list[httpx.Request] = field(default_factory=list)
    responses: list[tuple[float, httpx.Response]] = field(default_factory=list)

    def paths(self) -> list[str]:
        return [r.url.path for r in self.requests]

    def statuses(self) -> list[int]:
        return [r.status_code for _, r in self.responses]

    def on_request(self, request: httpx.Request) -> None:
        self.requests.append(request)

    def on_response(self, response: httpx.Response) -> None:
        self.responses.append((time.monotonic(), response))


def recorded_client(tenant: Tenant, recorder: Recorder, transport: httpx.BaseTransport | None = None, **options: Any) -> MediaGenClient:
    http = httpx.Client(
        timeout=httpx.Timeout(60.0, connect=10.0),
        event_hooks={"request": [recorder.on_request], "response": [recorder.on_response]},
        transport=transport,
    )
    return MediaGenClient(api_key=tenant.api_key, base_url=tenant.base_url, http_client=http, **options)


def raises_api_error(fn: Callable[[], object], status: int, code: str) -> MediaGenError:
    with pytest.raises(MediaGenError) as info:
        fn()
    err = info.value
    assert (err.status, err.code) == (status, code), repr(err)
    return err


def wait_until(what: str, check: Callable[[], T | None], timeout: float = 60.0, interval: float = 0.1) -> T:
    """Polls `check` until it returns something other than None, or fails naming what it waited for."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)
