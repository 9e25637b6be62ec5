"""429 answers retried after retry_after_ms, with the same Idempotency-Key; idempotent retries of
creates and uploads (the same key → the same answer, charged once)."""

from __future__ import annotations

import time
import uuid

from conftest import Stack
from support import Recorder, raises_api_error, recorded_client

from mediagen import MediaGenClient


def test_a_429_is_retried_after_retry_after_ms(stack: Stack) -> None:
    # Two requests per class per 3 s on this gateway: a third call in the window is refused, then admitted.
    tenant = stack.limited()
    recorder = Recorder()
    with recorded_client(tenant, recorder, max_retries=3) as c:
        for _ in range(4):
            assert c.projects.list()["data"][0]["id"] == tenant.project_id
    statuses = recorder.statuses()
    assert 429 in statuses, f"a call was limited: {statuses}"
    assert statuses[-1] == 200 and statuses.count(200) == 4, statuses
    first_429 = statuses.index(429)
    refused_at, refused = recorder.responses[first_429]
    wait_ms = int(refused.json()["retry_after_ms"])
    retried_at = recorder.responses[first_429 + 1][0]
    # The retry went out after the wait the gateway asked for (less the answer's own transit).
    assert retried_at - refused_at >= wait_ms / 1000 - 0.05, (retried_at - refused_at, wait_ms)


def test_a_429_retry_of_a_create_sends_the_same_idempotency_key(stack: Stack) -> None:
    tenant = stack.limited()
    recorder = Recorder()
    with recorded_client(tenant, recorder, max_retries=3) as c:
        jobs = [c.images.generate(project_id=tenant.project_id, prompt=f"limited {i}", model="nano-banana-2", aspect_ratio="1:1", count=1) for i in range(4)]
    assert len({j["id"] for j in jobs}) == 4, "four creates, four jobs"
    creates = [(r.headers.get("idempotency-key"), resp.status_code) for r, (_, resp) in zip(recorder.requests, recorder.responses) if r.url.path == "/v1/images/generate"]
    assert any(status == 429 for _, status in creates), creates
    keys = [k for k, _ in creates]
    assert all(keys), "every create carries a key"
    for i, (key, status) in enumerate(creates):
        if status == 429:
            assert creates[i + 1][0] == key, "the retry of a refused create carries its key"
    assert len(set(keys)) == 4, "one key per create, reused only by its retries"


def test_past_max_retries_a_429_is_a_media_gen_error_with_retry_after_ms(stack: Stack) -> None:
    # Two polls per minute: the third call is refused however slow the machine is.
    tenant = stack.strict(0)
    with MediaGenClient(api_key=tenant.api_key, base_url=tenant.base_url, max_retries=0) as c:
        c.projects.list()
        c.projects.list()
        err = raises_api_error(c.projects.list, 429, "rate_limited")
    assert err.retry_after_ms is not None and 0 < err.retry_after_ms <= 60_000, err.retry_after_ms
    assert err.request_id


def test_a_429_asking_longer_than_max_retry_delay_fails_at_once(stack: Stack) -> None:
    tenant = stack.strict(1)
    with MediaGenClient(api_key=tenant.api_key, base_url=tenant.base_url, max_retries=5, max_retry_delay=1.0) as c:
        c.projects.list()
        c.projects.list()
        started = time.monotonic()
        err = raises_api_error(c.projects.list, 429, "rate_limited")
    assert err.retry_after_ms is not None and err.retry_after_ms > 1000
    assert time.monotonic() - started < 1.0, "no wait of a minute"


def test_the_same_idempotency_key_gets_the_same_answer_and_one_charge(stack: Stack) -> None:
    tenant = stack.tenant("idempotency")
    body = {"project_id": tenant.project_id, "prompt": "once", "model": "nano-banana-2", "aspect_ratio": "1:1", "count": 1}
    key = str(uuid.uuid4())
    with MediaGenClient(api_key=tenant.api_key, base_url=tenant.base_url) as c:
        before = c.images.quote(project_id=tenant.project_id, prompt="x", model="nano-banana-2", aspect_ratio="1:1", count=1)
        first = c.images.generate(idempotency_key=key, project_id=tenant.project_id, prompt="once", model="nano-banana-2", aspect_ratio="1:1", count=1)
        again = c.images.generate(idempotency_key=key, project_id=tenant.project_id, prompt="once", model="nano-banana-2", aspect_ratio="1:1", count=1)
        assert again["id"] == first["id"] and again == first, "the first answer, replayed"
        after = c.images.quote(project_id=tenant.project_id, prompt="x", model="nano-banana-2", aspect_ratio="1:1", count=1)
        assert before["available"] - after["available"] == before["price"], "charged once"
        # Another body under the same key is refused; without a key each create is its own job.
        raises_api_error(lambda: c.images.generate(idempotency_key=key, **{**body, "prompt": "twice"}), 422, "idempotency_key_reused")  # type: ignore[arg-type]
        a = c.images.generate(project_id=tenant.project_id, prompt="auto", model="nano-banana-2", aspect_ratio="1:1", count=1)
        b = c.images.generate(project_id=tenant.project_id, prompt="auto", model="nano-banana-2", aspect_ratio="1:1", count=1)
        assert a["id"] != b["id"], "an automatic key per call"
        # Uploads too.
        upload_key = str(uuid.uuid4())
        u1 = c.upload_file(stack.file("fox.png"), project_id=tenant.project_id, idempotency_key=upload_key)
        u2 = c.upload_file(stack.file("fox.png"), project_id=tenant.project_id, idempotency_key=upload_key)
        assert u1["id"] == u2["id"]
