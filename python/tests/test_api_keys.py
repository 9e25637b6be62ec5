"""Self-serve API keys, their scopes and rules (docs/api/api-keys.md), through both clients."""

from __future__ import annotations

import pytest
from support import Tenant, raises_api_error

from mediagen import AsyncMediaGenClient, MediaGenClient


def test_an_owner_key_mints_lists_and_revokes_a_scoped_key(client: MediaGenClient, main: Tenant) -> None:
    made = client.api_keys.create("python reader", ["read"], allowed_ips=["127.0.0.1/8"])
    assert made["key"].startswith("mg_live_") and made["scopes"] == ["read"]
    assert made["allowed_ips"] == ["127.0.0.0/8"]
    listed = client.api_keys.list()["data"]
    assert any(k["id"] == made["id"] for k in listed)
    assert all("key" not in k for k in listed), "no secret in the list"
    with MediaGenClient(api_key=made["key"], base_url=main.base_url) as reader:
        assert reader.balance.get()["unit"] == "credits"
        raises_api_error(lambda: reader.api_keys.list(), 403, "key_scope_denied")
        raises_api_error(lambda: client.api_keys.create("bad", ["everything"]), 400, "invalid_request")
        assert client.api_keys.revoke(made["id"])["revoked_at"] is not None
        raises_api_error(lambda: reader.balance.get(), 401, "unauthorized")


@pytest.mark.anyio
async def test_the_async_client_mints_and_revokes(aclient: AsyncMediaGenClient) -> None:
    made = await aclient.api_keys.create("python async", ["read", "generate"], allowed_models=["nano-banana-2"])
    assert made["allowed_models"] == ["nano-banana-2"]
    assert (await aclient.api_keys.revoke(made["id"]))["revoked_at"] is not None
