"""The workspace event log (docs/api/events.md) through both clients: a job's moves are in it in
order, `iterate` follows `after` over every page and equals the pages read by hand, `types` keeps
what it names, and an unknown type is a 400."""

from __future__ import annotations

from typing import Any, cast

import pytest
from support import Tenant, raises_api_error

from mediagen import AsyncMediaGenClient, MediaGenClient


def test_a_jobs_moves_are_in_the_log_and_iterate_follows_after(client: MediaGenClient, main: Tenant) -> None:
    job = client.images.generate(project_id=main.project_id, prompt="an event log fox", model="nano-banana-2", aspect_ratio="1:1", count=1)
    done = client.wait_for_job(job).job
    events = list(client.events.iterate())
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    own = [e for e in events if e["subject_id"] == job["id"]]
    assert [e["type"] for e in own] == ["job.pending", "job.generating", f"job.{done['status']}"]
    assert all(e["id"].startswith(f"whk_{job['id']}_") for e in own)
    # The same events, read page by page with `after` (the workspace's other jobs may add more meanwhile).
    last = events[-1]["seq"]
    by_hand: list[Any] = []
    after = 0
    while True:
        page = cast("dict[str, Any]", client.events.list(after=after, limit=3))
        by_hand.extend(page["data"])
        if not page["has_more"]:
            break
        after = page["next_after"]
    assert [e["id"] for e in by_hand if e["seq"] <= last] == [e["id"] for e in events]
    completed = [e for e in client.events.iterate(types="job.completed") if e["seq"] <= last]
    assert [e["id"] for e in completed] == [e["id"] for e in events if e["type"] == "job.completed"]
    raises_api_error(lambda: client.events.list(types="jobs.*"), 400, "invalid_request")


@pytest.mark.anyio
async def test_the_async_client_iterates_the_log(aclient: AsyncMediaGenClient) -> None:
    seqs = [e["seq"] async for e in aclient.events.iterate(types="job.*")]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_the_stream_resumes_after_a_last_event_id(client: MediaGenClient, main: Tenant) -> None:
    job = client.images.generate(project_id=main.project_id, prompt="an event stream fox", model="nano-banana-2", aspect_ratio="1:1", count=1)
    client.wait_for_job(job)
    events = list(client.events.iterate())
    stream = client.events.stream(last_event_id=str(events[-3]["seq"]))
    try:
        got = [next(stream), next(stream)]
    finally:
        stream.close()
    assert [e["id"] for e in got] == [e["id"] for e in events[-2:]]
