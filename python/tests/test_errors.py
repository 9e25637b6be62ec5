"""Every class of error answer becomes a MediaGenError with status, code, message and request id."""

from __future__ import annotations

import pytest
from conftest import Stack
from support import Tenant, raises_api_error

from mediagen import MediaGenClient, MediaGenError


def test_error_answers_of_each_status_class(client: MediaGenClient, main: Tenant, stack: Stack) -> None:
    poor = stack.tenant("poor")
    other = stack.tenant("other")

    with MediaGenClient(api_key="mg_live_nope_nope", base_url=stack.base_url) as bad:
        unauthorized = raises_api_error(bad.projects.list, 401, "unauthorized")
    assert unauthorized.request_id, "the gateway's request id is kept"
    assert unauthorized.message and unauthorized.body["error"]["code"] == "unauthorized"

    raises_api_error(lambda: client.images.generate(project_id=main.project_id, prompt="x", model="nano-banana-2", aspect_ratio="1:1", count=9), 400, "invalid_request")
    raises_api_error(lambda: client.images.generate(project_id=main.project_id, prompt="x", model="dall-e", aspect_ratio="1:1", count=1), 400, "invalid_model")  # type: ignore[arg-type]

    with MediaGenClient(api_key=poor.api_key, base_url=poor.base_url) as c:
        err = raises_api_error(lambda: c.images.generate(project_id=poor.project_id, prompt="x", model="nano-banana-2", aspect_ratio="1:1", count=1), 402, "insufficient_credits")
        assert "credits" in err.message
        assert c.images.quote(project_id=poor.project_id, prompt="x", model="nano-banana-2", aspect_ratio="1:1", count=1)["available"] == 3, "a refused create charges nothing"

    raises_api_error(lambda: client.images.generate(project_id=other.project_id, prompt="x", model="nano-banana-2", aspect_ratio="1:1", count=1), 403, "forbidden")
    raises_api_error(lambda: client.images.get("img_doesnotexist"), 404, "not_found")
    raises_api_error(lambda: client.talking_actors.generate(project_id=main.project_id, actor_id="actor_missing", script="hi"), 404, "not_found")

    job = client.images.generate(project_id=main.project_id, prompt="not yet", model="nano-banana-2", aspect_ratio="1:1", count=1)
    not_ready = raises_api_error(lambda: client.images.url(job["id"]), 409, "not_ready")
    assert not_ready.body["status"] in ("pending", "generating")
    client.wait_for_job(job)
    raises_api_error(lambda: client.images.cancel(job["id"]), 409, "not_cancelable")
    # 410 (gone), 422 (idempotency_key_reused) and 429 (rate_limited) are met in their own tests.


def test_server_side_failures_are_5xx_media_gen_errors(stack: Stack) -> None:
    # A gateway configured with a bucket that does not exist.
    broken = stack.storageless()
    with MediaGenClient(api_key=broken.api_key, base_url=broken.base_url) as c:
        err = raises_api_error(c.ready, 503, "http_503")
        assert err.body == {"status": "not_ready", "checks": {"postgres": "ok", "temporal": "ok", "storage": "unavailable"}}
        with pytest.raises(MediaGenError) as info:
            c.upload_file(stack.file("fox.png"), project_id=broken.project_id)
        assert info.value.status >= 500 and info.value.code in ("internal_error", "service_unavailable"), repr(info.value)
        assert info.value.request_id


def test_no_answer_is_a_network_error_and_a_bad_setup_fails_before_sending() -> None:
    with MediaGenClient(api_key="k", base_url="http://127.0.0.1:9") as c:
        raises_api_error(c.projects.list, 0, "network_error")
    for api_key, base_url, code in (("", "http://127.0.0.1:9", "missing_api_key"), ("k", "", "missing_base_url")):
        try:
            MediaGenClient(api_key=api_key, base_url=base_url)
        except MediaGenError as e:
            assert e.code == code
        else:
            raise AssertionError(f"{code} was not raised")
