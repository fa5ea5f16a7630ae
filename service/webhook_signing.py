"""Standard Webhooks signatures: what lets a receiver trust that a delivery came from us.

A signed delivery carries three headers: ``webhook-id`` (the event's id, the same on every
retry so receivers can de-duplicate), ``webhook-timestamp`` (seconds since the epoch at
this attempt, so receivers can refuse replays of old deliveries) and ``webhook-signature``
``v1,<base64 of HMAC-SHA256(key, "<id>.<timestamp>.<body>")>``. The key is shared with
receivers as ``whsec_<base64 of the key>``, the form every Standard Webhooks library reads.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass, field

SECRET_PREFIX = "whsec_"
# The specification asks for keys of 24 to 64 bytes: shorter ones are guessable, and
# libraries in other languages may refuse longer ones.
MIN_KEY_BYTES = 24
MAX_KEY_BYTES = 64
SIGNATURE_VERSION = "v1"


class SecretError(ValueError):
    """A webhook secret that is not ``whsec_`` followed by base64 of 24 to 64 bytes.

    The message never repeats the secret."""


@dataclass(frozen=True)
class WebhookSecret:
    """The signing key; build it with ``WebhookSecret.parse``. Its repr hides the key."""

    key: bytes = field(repr=False)

    @classmethod
    def parse(cls, text: str) -> WebhookSecret:
        """The key of ``whsec_<base64>`` (standard alphabet, padding optional).

        Raises SecretError saying what is wrong."""
        text = text.strip()
        if not text.startswith(SECRET_PREFIX):
            raise SecretError(f"the webhook secret must start with {SECRET_PREFIX!r}")
        encoded = text[len(SECRET_PREFIX):]
        try:
            # validate=True: a typo (a character outside base64) must not silently drop
            # bits of the key, or receivers holding the text would never verify.
            key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        except binascii.Error:
            raise SecretError(f"the webhook secret must be {SECRET_PREFIX} followed by base64") from None
        if not MIN_KEY_BYTES <= len(key) <= MAX_KEY_BYTES:
            raise SecretError(
                f"the webhook secret's key must be {MIN_KEY_BYTES} to {MAX_KEY_BYTES} bytes, "
                f"not {len(key)} (generate one: {SECRET_PREFIX} + base64 of 32 random bytes)"
            )
        return cls(key)

    def sign(self, webhook_id: str, timestamp: int, body: str) -> str:
        """The ``webhook-signature`` header value for this id, timestamp and body text."""
        signed = f"{webhook_id}.{timestamp}.{body}".encode()
        digest = hmac.new(self.key, signed, hashlib.sha256).digest()
        return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode()}"

    def headers(self, webhook_id: str, timestamp: int, body: str) -> dict[str, str]:
        """The three Standard Webhooks headers of one delivery attempt."""
        return {
            "webhook-id": webhook_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": self.sign(webhook_id, timestamp, body),
        }
