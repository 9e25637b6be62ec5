"""wait_for_job: image and video jobs followed through the event stream and through polling, the
fallback to polling where the gateway has no stream, a dropped stream resumed with Last-Event-ID,
a failed job, a timeout, and the same with the async client."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from support import Recorder, Tenant, raises_api_error, recorded_client

from mediagen import AsyncMediaGenClient, MediaGenClient, WaitResult

ORDER = ["pending", "generating", "completed"]


def assert_moved_forward(seen: list[Mapping[str, Any]]) -> None:
    ranks = [ORDER.index(s["status"]) for s in seen]
    assert ranks == sorted(ranks), f"statuses only move forward: {[s['status'] for s in seen]}"
    assert seen[-1]["status"] == "completed"
    assert any(s.get("progress", {}).get("phase") == "generating" for s in seen), "the provider phase was reported"


def status_reads(recorder: Recorder, base: str, job_id: str) -> int:
    return recorder.paths().count(f"{base}/{job_id}")


def streams(recorder: Recorder, base: str, job_id: str) -> int:
    return recorder.paths().count(f"{base}/{job_id}/events")


def test_an_image_job_waited_through_the_event_stream(main: Tenant, tmp_path: Path) -> None:
    recorder = Recorder()
    with recorded_client(main, recorder) as c:
        job = c.images.generate(project_id=main.project_id, prompt="a red fox", model="nano-banana-2", aspect_ratio="16:9", count=2)
        seen: list[Mapping[str, Any]] = []
        result: WaitResult[Any] = c.wait_for_job(job, on_progress=seen.append)
        assert result.job["id"] == job["id"] and result.job["status"] == "completed"
        assert len(result.urls) == 2 and result.url == result.urls[0]
        assert_moved_forward(seen)
        # One status read, then only events.
        assert status_reads(recorder, "/v1/images", job["id"]) == 1
        assert streams(recorder, "/v1/images", job["id"]) >= 1
        paths = c.download_outputs(result.urls, f"{tmp_path}/out/", job_id=job["id"])
        assert [p.name for p in paths] == [f"{job['id']}-1.png", f"{job['id']}-2.png"]
        assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)
        single = c.download_outputs(result.urls, tmp_path / "fox.png", job_id=job["id"])
        assert [p.name for p in single] == ["fox.png", "fox-2.png"]


def test_a_video_job_waited_through_the_event_stream(main: Tenant) -> None:
    recorder = Recorder()
    with recorded_client(main, recorder) as c:
        job = c.videos.generate(project_id=main.project_id, prompt="waves", model="kling-2.6")
        seen: list[Mapping[str, Any]] = []
        result = c.wait_for_job(job, on_progress=seen.append)
        assert result.job["status"] == "completed" and result.job["duration"] > 0
        assert_moved_forward(seen)
        assert status_reads(recorder, "/v1/videos", job["id"]) == 1 and streams(recorder, "/v1/videos", job["id"]) >= 1
        head = httpx.get(result.url)
        assert head.status_code == 200 and head.headers["content-type"] == "video/mp4"


@pytest.mark.parametrize("kind", ["images", "videos"])
def test_image_and_video_jobs_waited_by_polling(main: Tenant, kind: str) -> None:
    recorder = Recorder()
    with recorded_client(main, recorder) as c:
        if kind == "images":
            job: Mapping[str, Any] = c.images.generate(project_id=main.project_id, prompt="polled fox", model="nano-banana-2", aspect_ratio="1:1", count=1)
        else:
            job = c.videos.generate(project_id=main.project_id, prompt="polled waves", model="kling-2.6")
        seen: list[Mapping[str, Any]] = []
        result = c.wait_for_job(job["id"], on_progress=seen.append, events=False, poll_interval=0.1, max_poll_interval=0.4)
        assert result.job["status"] == "completed"
        assert_moved_forward(seen)
        assert status_reads(recorder, f"/v1/{kind}", job["id"]) > 1, "polled"
        assert streams(recorder, f"/v1/{kind}", job["id"]) == 0


class NoEventStreams(httpx.BaseTransport):
    """A gateway without event streams, as older ones are: 404 for …/events, the rest passed on."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/events"):
            return httpx.Response(404, json={"error": {"code": "not_found", "message": "no such route"}}, request=request)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_polling_takes_over_where_the_gateway_has_no_event_stream(main: Tenant) -> None:
    recorder = Recorder()
    with recorded_client(main, recorder, transport=NoEventStreams()) as c:
        for kind in ("images", "videos"):
            if kind == "images":
                job: Mapping[str, Any] = c.images.generate(project_id=main.project_id, prompt="fallback fox", model="nano-banana-2", aspect_ratio="1:1", count=1)
            else:
                job = c.videos.generate(project_id=main.project_id, prompt="fallback waves", model="kling-2.6")
            result = c.wait_for_job(job, poll_interval=0.1, max_poll_interval=0.4)
            assert result.job["status"] == "completed"
            assert status_reads(recorder, f"/v1/{kind}", job["id"]) > 1
        # The 404 is remembered: the second job did not ask for a stream.
        assert sum(p.endswith("/events") for p in recorder.paths()) == 1


class CutFirstStream(httpx.BaseTransport):
    """Passes everything on, but drops the first event stream's connection after its first event."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.cut = False
        self.last_event_ids: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if not request.url.path.endswith("/events"):
            return response
        self.last_event_ids.append(request.headers.get("last-event-id"))
        if self.cut:
            return response
        self.cut = True
        return httpx.Response(response.status_code, headers=response.headers, stream=_FirstEventThenDrop(response), request=request)

    def close(self) -> None:
        self.inner.close()


class _FirstEventThenDrop(httpx.SyncByteStream):
    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    def __iter__(self) -> Iterator[bytes]:
        buffered = b""
        for chunk in self.response.stream:  # type: ignore[union-attr]
            buffered += chunk
            if b"\n\n" in buffered:
                yield buffered[: buffered.index(b"\n\n") + 2]
                raise httpx.RemoteProtocolError("peer closed connection (cut by the test)")
        yield buffered

    def close(self) -> None:
        self.response.close()


def test_a_dropped_stream_is_resumed_with_last_event_id(main: Tenant) -> None:
    transport = CutFirstStream()
    recorder = Recorder()
    with recorded_client(main, recorder, transport=transport) as c:
        job = c.images.generate(project_id=main.project_id, prompt="resumed fox", model="nano-banana-2", aspect_ratio="1:1", count=1)
        result = c.wait_for_job(job)
        assert result.job["status"] == "completed"
        assert status_reads(recorder, "/v1/images", job["id"]) == 1, "no polling: the stream was reopened"
    assert len(transport.last_event_ids) >= 2
    assert transport.last_event_ids[0] is None
    assert transport.last_event_ids[1] is not None and transport.last_event_ids[1].isdigit(), transport.last_event_ids


def test_a_failed_job_raises_its_error_and_a_timeout_stops_waiting(client: MediaGenClient, main: Tenant) -> None:
    doomed = client.images.generate(project_id=main.project_id, prompt="doomed [fail:terminal]", model="nano-banana-2", aspect_ratio="1:1", count=1)
    err = raises_api_error(lambda: client.wait_for_job(doomed), 409, "generation_failed")
    assert err.body["status"] == "failed" and "failed" in err.message

    slow = client.images.generate(project_id=main.project_id, prompt="slow fox", model="nano-banana-2", aspect_ratio="1:1", count=1)
    raises_api_error(lambda: client.wait_for_job(slow, timeout=0.3), 0, "timeout")
    raises_api_error(lambda: client.wait_for_job(slow, timeout=0.3, events=False), 0, "timeout")
    assert client.wait_for_job(slow).job["status"] == "completed"
    raises_api_error(lambda: client.wait_for_job("nope_123"), 0, "invalid_job_id")


@pytest.mark.anyio
async def test_the_async_client_waits_through_the_stream_and_by_polling(aclient: AsyncMediaGenClient, main: Tenant) -> None:
    image = await aclient.images.generate(project_id=main.project_id, prompt="async fox", model="nano-banana-2", aspect_ratio="1:1", count=1)
    video = await aclient.videos.generate(project_id=main.project_id, prompt="async waves", model="kling-2.6")
    seen: list[Mapping[str, Any]] = []
    streamed = await aclient.wait_for_job(image, on_progress=seen.append)
    polled = await aclient.wait_for_job(video, events=False, poll_interval=0.1)
    assert (streamed.job["status"], polled.job["status"]) == ("completed", "completed")
    assert_moved_forward(seen)
    doomed = await aclient.videos.generate(project_id=main.project_id, prompt="doomed [fail:terminal]", model="kling-2.6")
    with pytest.raises(Exception) as info:
        await aclient.wait_for_job(doomed)
    assert getattr(info.value, "code", None) == "generation_failed"
