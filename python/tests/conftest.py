"""The live stack the node test (test/e2e/python-client.test.ts) started for these tests: a gateway
and workers over loopback, tenants, an actor and a voice, sample files, gateways with tiny rate
limits, all described in the JSON file named by MEDIAGEN_TEST_FIXTURES."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import Tenant

from mediagen import AsyncMediaGenClient, MediaGenClient


@dataclass
class Stack:
    raw: dict[str, Any]

    @property
    def base_url(self) -> str:
        return str(self.raw["base_url"])

    def tenant(self, name: str) -> Tenant:
        t = self.raw["tenants"][name]
        return Tenant(t["api_key"], t["project_id"], t["workspace_id"], self.base_url)

    def file(self, name: str) -> Path:
        return Path(self.raw["files"][name])

    def limited(self) -> Tenant:
        t = self.raw["limited"]
        return Tenant(t["api_key"], t["project_id"], t["workspace_id"], t["base_url"])

    def storageless(self) -> Tenant:
        t = self.raw["storageless"]
        return Tenant(t["api_key"], t["project_id"], t["workspace_id"], t["base_url"])

    def strict(self, i: int) -> Tenant:
        t = self.raw["strict"][i]
        return Tenant(t["api_key"], t["project_id"], t["workspace_id"], t["base_url"])


@pytest.fixture(scope="session")
def stack() -> Stack:
    path = os.environ.get("MEDIAGEN_TEST_FIXTURES")
    if not path:
        pytest.fail("MEDIAGEN_TEST_FIXTURES is not set: these tests run from `npm test -- python-client`, which starts the stack")
    return Stack(json.loads(Path(path).read_text(encoding="utf-8")))


@pytest.fixture(scope="session")
def main(stack: Stack) -> Tenant:
    return stack.tenant("main")


@pytest.fixture
def client(main: Tenant) -> Iterator[MediaGenClient]:
    with MediaGenClient(api_key=main.api_key, base_url=f"{main.base_url}/v1") as c:
        yield c


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def aclient(main: Tenant) -> Any:
    async with AsyncMediaGenClient(api_key=main.api_key, base_url=main.base_url) as c:
        yield c
