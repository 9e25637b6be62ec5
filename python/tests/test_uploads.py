"""Uploads from a path, bytes, a file object and a URL through the gateway, and direct (presigned)
uploads straight to storage."""

from __future__ import annotations

import httpx
import pytest
from conftest import Stack
from support import Tenant, raises_api_error

from mediagen import AsyncMediaGenClient, MediaGenClient


def stored_bytes(url: str) -> bytes:
    res = httpx.get(url)
    assert res.status_code == 200, res.text
    return res.content


def test_upload_file_takes_a_path_bytes_or_a_file_object_and_upload_from_url_fetches(client: MediaGenClient, main: Tenant, stack: Stack) -> None:
    png = stack.file("fox.png").read_bytes()
    from_path = client.upload_file(stack.file("fox.png"), project_id=main.project_id)
    assert (from_path["name"], from_path["file_type"], from_path["mime_type"], from_path["file_size"]) == ("fox.png", "image", "image/png", len(png))
    assert stored_bytes(from_path["path"]) == png, "the stored bytes are the file"
    from_str_path = client.upload_file(str(stack.file("fox.jpg")), project_id=main.project_id)
    assert from_str_path["mime_type"] == "image/jpeg"
    with stack.file("clip.mp4").open("rb") as f:
        from_file = client.upload_file(f, project_id=main.project_id)
    assert (from_file["name"], from_file["file_type"], from_file["mime_type"]) == ("clip.mp4", "video", "video/mp4")
    from_bytes = client.upload_file(png, project_id=main.project_id, filename="bytes.png")
    assert (from_bytes["name"], from_bytes["file_size"]) == ("bytes.png", len(png))
    assert len({from_path["id"], from_file["id"], from_bytes["id"]}) == 3

    from_url = client.upload_from_url(stack.raw["remote_image_url"], project_id=main.project_id)
    assert (from_url["file_type"], from_url["mime_type"], from_url["file_size"]) == ("image", "image/png", len(png))

    raises_api_error(lambda: client.upload_file(stack.file("fox.png").with_name("missing.png"), project_id=main.project_id), 0, "file_not_found")
    raises_api_error(lambda: client.upload_file(b"not media", project_id=main.project_id, filename="a.txt"), 400, "invalid_request")


def test_direct_uploads_go_to_storage_with_the_presigned_post(client: MediaGenClient, main: Tenant, stack: Stack) -> None:
    mp4 = stack.file("clip.mp4").read_bytes()
    direct = client.upload_direct(stack.file("clip.mp4"), project_id=main.project_id)
    assert (direct["name"], direct["file_type"], direct["mime_type"], direct["file_size"], direct["status"]) == ("clip.mp4", "video", "video/mp4", len(mp4), "completed")
    assert client.uploads.get(direct["id"])["status"] == "completed"
    assert stored_bytes(direct["path"]) == mp4

    # Step by step: pending until completed, and completing before the bytes are sent is refused.
    png = stack.file("fox.png").read_bytes()
    created = client.uploads.create(project_id=main.project_id, name="x.png", mime_type="image/png", size=len(png))
    assert created["status"] == "pending" and created["upload"]["method"] == "POST"
    assert client.uploads.get(created["id"])["status"] == "pending"
    raises_api_error(lambda: client.uploads.complete(created["id"]), 409, "not_ready")

    # Bytes that are not what they claim: storage takes them (type and size match), completion refuses.
    raises_api_error(lambda: client.upload_direct(b"\x01" * 64, project_id=main.project_id, filename="fake.png"), 400, "invalid_request")
    raises_api_error(lambda: client.upload_direct(b"x", project_id=main.project_id, filename="notes.txt"), 0, "unknown_mime_type")
    raises_api_error(lambda: client.uploads.get("file_doesnotexist"), 404, "not_found")


@pytest.mark.anyio
async def test_the_async_client_uploads_directly_and_through_the_gateway(aclient: AsyncMediaGenClient, main: Tenant, stack: Stack) -> None:
    direct = await aclient.upload_direct(stack.file("fox.png"), project_id=main.project_id)
    assert direct["status"] == "completed" and direct["mime_type"] == "image/png"
    through = await aclient.upload_file(stack.file("clip.mp4"), project_id=main.project_id)
    assert through["file_type"] == "video"
    assert (await aclient.uploads.get(direct["id"]))["id"] == direct["id"]
