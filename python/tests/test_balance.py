"""The balance and its low-balance alerts (docs/api/balance.md), through both clients."""

from __future__ import annotations

import pytest
from support import Tenant, raises_api_error

from mediagen import AsyncMediaGenClient, MediaGenClient


def test_balance_reads_the_credits_and_the_alerts_are_owner_set(client: MediaGenClient, main: Tenant) -> None:
    b = client.balance.get()
    assert b["unit"] == "credits"
    assert b["available"] >= 0 and b["held"] >= 0
    assert b["period"]["start"] < b["period"]["end"]
    # A threshold that is not a positive whole number of credits is refused with 400, nothing changed.
    raises_api_error(lambda: client.balance.set_alerts([0]), 400, "invalid_request")
    assert client.balance.get()["thresholds"] == []
    # Thresholds without a URL of their own: balance.low reaches the workspace's balance.* endpoints.
    assert client.balance.set_alerts([5]) == {"thresholds": [5], "url": None}
    assert client.balance.set_alerts([]) == {"thresholds": [], "url": None}
    assert client.balance.get()["thresholds"] == []


@pytest.mark.anyio
async def test_the_async_client_reads_the_balance(aclient: AsyncMediaGenClient) -> None:
    b = await aclient.balance.get()
    assert b["unit"] == "credits" and isinstance(b["available"], int)
