"""AsyncMediaGenClient mirrors MediaGenClient: the same methods with the same parameters, awaited."""

from __future__ import annotations

import inspect
from typing import Any

from mediagen import OPERATION_METHODS, AsyncMediaGenClient, MediaGenClient

HELPERS = ["paginate", "wait_for_job", "get_job", "job_url", "job_events", "upload_direct", "download_outputs", "request", "send", "images.quote", "videos.quote", "replace_actors.quote", "talking_actors.quote", "jobs.get", "pipelines.wait"]


def method_at(client: object, dotted: str) -> Any:
    target: Any = client
    for name in dotted.split("."):
        target = getattr(target, name)
    return target


def test_every_method_has_its_async_twin_with_the_same_parameters() -> None:
    sync_client = MediaGenClient(api_key="k", base_url="http://127.0.0.1:9")
    async_client = AsyncMediaGenClient(api_key="k", base_url="http://127.0.0.1:9")
    for dotted in sorted({*OPERATION_METHODS.values(), *HELPERS}):
        sync_method, async_method = method_at(sync_client, dotted), method_at(async_client, dotted)
        sync_params = list(inspect.signature(sync_method).parameters.items())
        async_params = list(inspect.signature(async_method).parameters.items())
        assert [(n, p.kind, p.default) for n, p in sync_params] == [(n, p.kind, p.default) for n, p in async_params], dotted
        assert inspect.iscoroutinefunction(async_method) or inspect.isasyncgenfunction(async_method) or dotted.endswith(".events"), f"{dotted} is awaited on the async client"
        assert not (inspect.iscoroutinefunction(sync_method) or inspect.isasyncgenfunction(sync_method)), dotted
    sync_client.close()
