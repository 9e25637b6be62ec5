"""Every operation of the gateway's OpenAPI document through its client method, sync and async."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from conftest import Stack
from support import Tenant, raises_api_error

from mediagen import OPERATION_METHODS, AsyncMediaGenClient, MediaGenClient
from mediagen.models import OPERATION_IDS


def method_at(client: object, dotted: str) -> Any:
    target: Any = client
    for name in dotted.split("."):
        target = getattr(target, name)
    return target


def test_every_served_operation_has_a_method_on_both_clients(client: MediaGenClient, main: Tenant) -> None:
    doc = client.openapi()
    assert doc["openapi"] == "3.1.0"
    served = {op["operationId"] for item in doc["paths"].values() for op in item.values() if isinstance(op, dict) and "operationId" in op}
    assert len(served) >= 40, sorted(served)
    assert served == set(OPERATION_IDS), "the generated models are of another document: regenerate them"
    aclient = AsyncMediaGenClient(api_key=main.api_key, base_url=main.base_url)
    for op_id in sorted(served):
        assert op_id in OPERATION_METHODS, f"{op_id} has no client method: add it to OPERATION_METHODS"
        assert callable(method_at(client, OPERATION_METHODS[op_id])), f"{op_id} → MediaGenClient.{OPERATION_METHODS[op_id]}"
        assert callable(method_at(aclient, OPERATION_METHODS[op_id])), f"{op_id} → AsyncMediaGenClient.{OPERATION_METHODS[op_id]}"


def test_health_readiness_and_the_document(client: MediaGenClient) -> None:
    assert client.health() == {"status": "ok"}
    ready = client.ready()
    assert ready["status"] == "ready"
    assert ready["checks"] and all(v == "ok" for v in ready["checks"].values())


def test_discovery_lists_and_paginate(client: MediaGenClient, main: Tenant, stack: Stack) -> None:
    projects = client.projects.list()
    assert [p["id"] for p in projects["data"]] == [main.project_id]
    assert projects["next_cursor"] is None

    actors = client.actors.list(limit=100)
    actor = next(a for a in actors["data"] if a["id"] == stack.raw["actor_id"])
    assert actor["default_voice_id"] == stack.raw["voice_id"]
    assert any(v["id"] == stack.raw["voice_id"] for v in client.voices.list()["data"])

    one_per_page = [a["id"] for a in client.paginate(client.actors.list, limit=1)]
    assert one_per_page == [a["id"] for a in actors["data"]], "one item per page, in the same order"
    assert [p["id"] for p in client.paginate(client.projects.list)] == [main.project_id]


def test_the_audit_log_with_an_owner_key(client: MediaGenClient, main: Tenant) -> None:
    created = client.audit_events.list(action="api_key.created")
    assert created["data"], "the key's own creation is in its workspace's log"
    assert all(e["action"] == "api_key.created" and e["actor"] != "" for e in created["data"])
    assert [e["id"] for e in client.paginate(client.audit_events.list, limit=1, action="api_key.created")] == [e["id"] for e in created["data"]]


def test_models_job_lists_and_dry_run_quotes(client: MediaGenClient, main: Tenant) -> None:
    models = client.models.list()["data"]
    names = {kind: [m["name"] for m in models if m["kind"] == kind] for kind in ("image", "video", "replace_actor", "talking_actor")}
    assert "nano-banana-2" in names["image"] and "kling-2.6" in names["video"]
    assert len(names["replace_actor"]) == 1 and names["talking_actor"] == ["talking-actor", "talking-actor-v3"]
    queue = client.queue.get(model="nano-banana-2")["data"]
    assert [(e["model"], e["priority"]) for e in queue] == [("nano-banana-2", p) for p in ("high", "normal", "low")]
    assert all(e["waiting"]["workspace"] <= e["waiting"]["total"] for e in queue)
    assert client.budgets.list()["data"] == []  # a workspace without budgets

    job = client.images.generate(project_id=main.project_id, prompt="listed", model="nano-banana-2", aspect_ratio="1:1", count=1)
    latest = client.jobs.list(limit=10)["data"][0]
    assert (latest["id"], latest["kind"]) == (job["id"], "image")
    assert job["id"] in [j["id"] for j in client.images.list(project_id=main.project_id)["data"]]
    assert client.jobs.get(job["id"])["id"] == job["id"]
    assert job["id"] in [j["id"] for j in client.paginate(client.jobs.list, limit=5, project_id=main.project_id)]

    quote = client.images.quote(project_id=main.project_id, prompt="priced", model="nano-banana-2", aspect_ratio="1:1", count=3)
    assert quote["price"] == 12
    assert quote["sufficient"] is True and quote["available"] > 0
    assert client.videos.quote(project_id=main.project_id, prompt="priced", model="kling-2.6")["price"] > 0

    # priority on a create: low is quoted and charged with the model's discount, and shown on the record.
    nano = next(m for m in models if m["name"] == "nano-banana-2")
    assert nano["price"]["low_priority_discount"] > 0
    assert client.images.quote(project_id=main.project_id, prompt="cheap", model="nano-banana-2", aspect_ratio="1:1", count=3, priority="low")["price"] < 12
    low = client.images.generate(project_id=main.project_id, prompt="cheap", model="nano-banana-2", aspect_ratio="1:1", count=1, priority="low")
    assert low["priority"] == "low" and job["priority"] == "normal"
    assert [j["id"] for j in client.jobs.list(priority="low")["data"]] == [low["id"]]


def test_metadata_and_tags_on_a_create_and_as_list_filters(client: MediaGenClient, main: Tenant) -> None:
    labelled = client.images.generate(
        project_id=main.project_id,
        prompt="labelled",
        model="nano-banana-2",
        aspect_ratio="1:1",
        count=1,
        metadata={"customer": "cus 42/py"},
        tags=["py-client", "batch:7"],
    )
    assert (labelled["metadata"], labelled["tags"]) == ({"customer": "cus 42/py"}, ["py-client", "batch:7"])
    client.images.generate(project_id=main.project_id, prompt="one tag", model="nano-banana-2", aspect_ratio="1:1", count=1, tags=["py-client"])
    assert [j["id"] for j in client.jobs.list(tag=["py-client", "batch:7"])["data"]] == [labelled["id"]]
    assert [j["id"] for j in client.images.list(metadata={"customer": "cus 42/py"})["data"]] == [labelled["id"]]
    assert len(client.jobs.list(tag="py-client")["data"]) == 2
    err = raises_api_error(
        lambda: client.images.generate(project_id=main.project_id, prompt="bad", model="nano-banana-2", aspect_ratio="1:1", count=1, tags=["a b"]),
        400,
        "invalid_request",
    )
    assert err.message.startswith("tags.0:"), err.message


@pytest.fixture(scope="module")
def inputs(stack: Stack, main: Tenant) -> dict[str, str]:
    """An uploaded image and video, for replace-actor jobs."""
    with MediaGenClient(api_key=main.api_key, base_url=main.base_url) as c:
        image = c.upload_file(stack.file("fox.png"), project_id=main.project_id)
        video = c.upload_file(stack.file("clip.mp4"), project_id=main.project_id)
    return {"image": image["id"], "video": video["id"]}


def create(client: MediaGenClient, kind: str, main: Tenant, stack: Stack, inputs: dict[str, str], prompt: str = "a red fox") -> dict[str, Any]:
    pid = main.project_id
    if kind == "images":
        return dict(client.images.generate(project_id=pid, prompt=prompt, model="nano-banana-2", aspect_ratio="1:1", count=1))
    if kind == "videos":
        return dict(client.videos.generate(project_id=pid, prompt=prompt, model="kling-2.6"))
    if kind == "replace_actors":
        return dict(client.replace_actors.generate(project_id=pid, image_file_id=inputs["image"], video_file_id=inputs["video"], duration=3))
    return dict(client.talking_actors.generate(project_id=pid, actor_id=stack.raw["actor_id"], script="Hello there."))


def quote(client: MediaGenClient, kind: str, main: Tenant, stack: Stack, inputs: dict[str, str]) -> int:
    pid = main.project_id
    if kind == "images":
        return client.images.quote(project_id=pid, prompt="x", model="nano-banana-2", aspect_ratio="1:1", count=1)["price"]
    if kind == "videos":
        return client.videos.quote(project_id=pid, prompt="x", model="kling-2.6")["price"]
    if kind == "replace_actors":
        return client.replace_actors.quote(project_id=pid, image_file_id=inputs["image"], video_file_id=inputs["video"], duration=3)["price"]
    return client.talking_actors.quote(project_id=pid, actor_id=stack.raw["actor_id"], script="Hello there.")["price"]


@pytest.mark.parametrize("kind", ["images", "videos", "replace_actors", "talking_actors"])
def test_each_kind_quote_generate_get_url_events_list_delete_and_cancel(client: MediaGenClient, main: Tenant, stack: Stack, inputs: dict[str, str], kind: str) -> None:
    resource = getattr(client, kind)
    assert quote(client, kind, main, stack, inputs) > 0

    job = create(client, kind, main, stack, inputs)
    assert job["status"] == "pending"
    assert resource.get(job["id"])["id"] == job["id"]
    not_ready = raises_api_error(lambda: resource.url(job["id"]), 409, "not_ready")
    assert not_ready.body["status"] in ("pending", "generating")

    statuses = [ev.job["status"] for ev in resource.events(job["id"])]
    assert statuses[-1] == "completed", statuses
    url = resource.url(job["id"])
    assert url["id"] == job["id"]
    assert httpx.get(url["url"]).status_code == 200
    assert [ev.job["status"] for ev in resource.events(job["id"])] == ["completed"], "a finished job: its record, then the end"
    assert job["id"] in [j["id"] for j in resource.list(project_id=main.project_id, limit=100)["data"]]

    removed = resource.delete_outputs(job["id"])
    assert removed["id"] == job["id"] and removed["outputs_removed_at"] > 0
    raises_api_error(lambda: resource.url(job["id"]), 410, "gone")

    second = create(client, kind, main, stack, inputs, prompt="canceled fox")
    assert resource.cancel(second["id"])["id"] == second["id"]
    err = raises_api_error(lambda: client.wait_for_job(second, poll_interval=0.1), 409, "canceled")
    assert err.body["status"] == "failed"
    raises_api_error(lambda: resource.cancel(second["id"]), 409, "not_cancelable")


@pytest.mark.anyio
async def test_the_async_client_serves_the_same_operations(aclient: AsyncMediaGenClient, main: Tenant, stack: Stack) -> None:
    assert await aclient.health() == {"status": "ok"}
    assert [p["id"] async for p in aclient.paginate(aclient.projects.list)] == [main.project_id]
    assert stack.raw["actor_id"] in [a["id"] async for a in aclient.paginate(aclient.actors.list, limit=1)]
    job = await aclient.talking_actors.generate(project_id=main.project_id, actor_id=stack.raw["actor_id"], script="Hi.")
    assert job["voice_id"] == stack.raw["voice_id"], "the actor's default voice"
    assert (await aclient.talking_actors.get(job["id"]))["script"] == "Hi."
    statuses = [ev.job["status"] async for ev in aclient.talking_actors.events(job["id"])]
    assert statuses[-1] == "completed"
    assert (await aclient.talking_actors.url(job["id"]))["url"].startswith("http")
    assert (await aclient.jobs.list(limit=1))["data"][0]["id"] == job["id"]
    assert (await aclient.models.list())["data"]
    assert len((await aclient.queue.get())["data"]) == 3 * len((await aclient.models.list())["data"])
    assert (await aclient.budgets.list())["data"] == []
    assert (await aclient.openapi())["openapi"] == "3.1.0"
