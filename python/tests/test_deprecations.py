"""A deprecated model's create is served and raises a ModelDeprecationWarning with the gateway's
warning (its Deprecation and X-Mediagen-Warning headers); other models raise none."""

from __future__ import annotations

import warnings

import pytest
from support import Tenant

from mediagen import MediaGenClient, ModelDeprecationWarning


def test_a_deprecated_model_warns_naming_its_replacement(client: MediaGenClient, main: Tenant) -> None:
    with pytest.warns(ModelDeprecationWarning, match=r"^model sora-2 is deprecated since 2026-09-24 .*; use veo-3\.1 instead$"):
        job = client.videos.generate(project_id=main.project_id, prompt="a deprecated name", model="sora-2", duration=4)
    assert job["id"].startswith("vid_")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelDeprecationWarning)
        client.videos.generate(project_id=main.project_id, prompt="a current name", model="kling-2.6")
