"""A job's webhook deliveries, received on a loopback server and verified with verify_webhook."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import Stack
from support import Tenant, raises_api_error, wait_until

from mediagen import MediaGenClient, verify_webhook


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes


class Receiver:
    """Records every POST; answers 204."""

    def __init__(self) -> None:
        self.received: list[Delivery] = []
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server name)
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                received.append(Delivery(self.path, {k: v for k, v in self.headers.items()}, body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def at(self, path: str) -> list[Delivery]:
        return [d for d in self.received if d.path == path]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()


def test_webhook_deliveries_verify_with_the_workspace_secret(client: MediaGenClient, main: Tenant, stack: Stack, receiver: Receiver) -> None:
    secret = stack.raw["webhook_secret"]
    job = client.images.generate(
        project_id=main.project_id,
        prompt="a webhooked fox",
        model="nano-banana-2",
        aspect_ratio="1:1",
        count=1,
        webhook_url=f"{receiver.base}/hooks/fox",
        webhook_events=["generating", "completed"],
    )
    client.wait_for_job(job)
    deliveries = wait_until("the generating and completed deliveries", lambda: receiver.at("/hooks/fox") if len(receiver.at("/hooks/fox")) >= 2 else None)
    events = [verify_webhook(secret, d.body, d.headers) for d in deliveries]
    assert sorted(e["type"] for e in events) == ["job.completed", "job.generating"]
    completed = next(e for e in events if e["type"] == "job.completed")
    assert completed["data"]["id"] == job["id"] and completed["data"]["status"] == "completed"

    delivery = deliveries[0]
    # Header names in any case, and the body as text, verify the same.
    assert verify_webhook(secret, delivery.body.decode(), {k.upper(): v for k, v in delivery.headers.items()})["data"]["id"] == job["id"]
    tampered = json.dumps({**json.loads(delivery.body), "type": "job.failed"}).encode()
    raises_api_error(lambda: verify_webhook(secret, tampered, delivery.headers), 0, "invalid_signature")
    raises_api_error(lambda: verify_webhook("whsec_" + "A" * 43 + "=", delivery.body, delivery.headers), 0, "invalid_signature")
    raises_api_error(lambda: verify_webhook(secret, delivery.body, {}), 0, "invalid_signature")
