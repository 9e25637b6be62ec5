"""Verifying the gateway's webhook deliveries (Standard Webhooks: webhook-id, webhook-timestamp,
webhook-signature, HMAC-SHA256 with the workspace's signing secret)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from standardwebhooks import Webhook, WebhookVerificationError

from ._errors import MediaGenError
from .models import WebhookEvent

_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")


def verify_webhook(secret: str, body: str | bytes, headers: Mapping[str, str]) -> WebhookEvent:
    """Checks a delivery's signature and timestamp (5 minutes tolerance) against the workspace's
    signing secret (`whsec_...`) and returns the parsed event (`type`, `data`: the job record);
    raises MediaGenError `invalid_signature` otherwise. Pass the raw body exactly as received,
    before any JSON parsing; header names are matched case-insensitively."""
    lowered = {k.lower(): v for k, v in headers.items()}
    wanted = {name: lowered.get(name, "") for name in _HEADERS}
    try:
        return cast(WebhookEvent, Webhook(secret).verify(body, wanted))
    except WebhookVerificationError as e:
        raise MediaGenError(status=0, code="invalid_signature", message=f"webhook verification failed: {e}") from e
