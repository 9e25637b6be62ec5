"""mg.pipelines.wait: an image -> video pipeline followed through its event stream to the completed
record (each state reported), the fallback to polling where the gateway has no stream, a failed
pipeline answered (not raised), a timeout, and the same with the async client."""

from __future__ import annotations

from typing import Any

import pytest
from support import Recorder, Tenant, raises_api_error, recorded_client
from test_wait import NoEventStreams

from mediagen import AsyncMediaGenClient, MediaGenClient
from mediagen.models import PipelineCreate


def pipeline(tenant: Tenant, image_prompt: str = "a red lighthouse") -> PipelineCreate:
    return {
        "project_id": tenant.project_id,
        "steps": [
            {"id": "still", "kind": "image", "body": {"prompt": image_prompt, "model": "nano-banana-2", "aspect_ratio": "16:9", "count": 1}},
            {
                "id": "clip",
                "kind": "video",
                "body": {"prompt": "a slow pan", "model": "seedance-1.5", "resolution": "480p", "duration": 4, "start_frame_file_id": {"from": "still", "output": 0}},
            },
        ],
    }


def test_a_pipeline_waited_through_its_event_stream(main: Tenant) -> None:
    recorder = Recorder()
    with recorded_client(main, recorder) as c:
        created = c.pipelines.create(pipeline(main))
        seen: list[dict[str, Any]] = []
        done = c.pipelines.wait(created["id"], on_update=seen.append, timeout=120)
        assert done["status"] == "completed", done.get("error")
        assert [s["status"] for s in done["steps"]] == ["completed", "completed"]
        assert all(len(s["outputs"]) == 1 for s in done["steps"])
        # Each state once, in order: the first step completes before the second does.
        assert len(seen) >= 3 and seen[-1]["status"] == "completed"
        first_done = next(i for i, p in enumerate(seen) if p["steps"][0]["status"] == "completed")
        assert all(p["steps"][1]["status"] != "completed" for p in seen[:first_done])
        # One read, then only the stream.
        paths = recorder.paths()
        assert paths.count(f"/v1/pipelines/{created['id']}") == 1, paths
        assert paths.count(f"/v1/pipelines/{created['id']}/events") >= 1


def test_polling_where_there_is_no_stream_a_failed_pipeline_is_answered_and_a_timeout_stops_waiting(main: Tenant, client: MediaGenClient) -> None:
    recorder = Recorder()
    with recorded_client(main, recorder, transport=NoEventStreams()) as c:
        doomed = c.pipelines.create(pipeline(main, "doomed [fail:terminal]"))
        failed = c.pipelines.wait(doomed["id"], poll_interval=0.1)
        assert failed["status"] == "failed"
        assert [s["status"] for s in failed["steps"]] == ["failed", "waiting"]
        assert recorder.paths().count(f"/v1/pipelines/{doomed['id']}") > 1, "it polled"

    slow = client.pipelines.create(pipeline(main))
    raises_api_error(lambda: client.pipelines.wait(slow["id"], timeout=0.3), 0, "timeout")
    raises_api_error(lambda: client.pipelines.wait(slow["id"], timeout=0.3, events=False), 0, "timeout")
    assert client.pipelines.wait(slow["id"])["status"] == "completed"


@pytest.mark.anyio
async def test_the_async_client_waits_for_a_pipeline(aclient: AsyncMediaGenClient, main: Tenant) -> None:
    created = await aclient.pipelines.create(pipeline(main))
    seen: list[dict[str, Any]] = []
    done = await aclient.pipelines.wait(created["id"], on_update=seen.append)
    assert done["status"] == "completed"
    assert seen and seen[-1]["status"] == "completed"
    events = [ev async for ev in aclient.pipelines.events(created["id"])]
    assert len(events) == 1 and events[0].pipeline["status"] == "completed", "a finished pipeline's stream answers its record, then ends"
    assert events[0].id is not None and events[0].id.isdigit()
