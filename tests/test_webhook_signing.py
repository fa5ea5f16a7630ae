"""Standard Webhooks signatures, checked with the standardwebhooks library itself."""
from __future__ import annotations

import base64
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from service.config import Config, ConfigError
from service.webhook_signing import SecretError, WebhookSecret
from tests.webhooks.support import body_for, new_secret

BODY = body_for("g_example", "turn", seat=1)


def test_signed_headers_verify_with_the_standardwebhooks_library() -> None:
    secret = new_secret()
    headers = WebhookSecret.parse(secret).headers("wh_1", int(time.time()), BODY)
    assert set(headers) == {"webhook-id", "webhook-timestamp", "webhook-signature"}
    assert headers["webhook-signature"].startswith("v1,")
    assert Webhook(secret).verify(BODY, headers) == {"type": "turn", "timestamp": "2026-01-01T00:00:00Z",
                                                     "data": {"game": "g_example", "seat": 1}}


@pytest.mark.parametrize("tamper", ["body", "id", "timestamp", "secret"])
def test_any_change_breaks_the_signature(tamper: str) -> None:
    secret = new_secret()
    now = int(time.time())
    headers = WebhookSecret.parse(secret).headers("wh_1", now, BODY)
    body = BODY
    if tamper == "body":
        body = BODY.replace('"seat":1', '"seat":0')
    elif tamper == "id":
        headers["webhook-id"] = "wh_2"
    elif tamper == "timestamp":
        headers["webhook-timestamp"] = str(now - 1)
    else:
        secret = new_secret()
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body, headers)


def test_unpadded_base64_is_accepted_like_the_libraries_do() -> None:
    key = bytes(range(32))
    text = "whsec_" + base64.b64encode(key).decode().rstrip("=")
    assert WebhookSecret.parse(text).key == key


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0", "must start with 'whsec_'"),
        ("whsec_not*base64!", "followed by base64"),
        ("whsec_" + base64.b64encode(b"short-key").decode(), "24 to 64 bytes, not 9"),
        ("whsec_" + base64.b64encode(bytes(65)).decode(), "24 to 64 bytes, not 65"),
    ],
)
def test_a_bad_secret_is_refused_with_what_is_wrong_but_not_the_secret(text: str, message: str) -> None:
    with pytest.raises(SecretError, match=message) as refused:
        WebhookSecret.parse(text)
    assert text.removeprefix("whsec_") not in str(refused.value)


def test_the_key_never_shows_in_a_repr() -> None:
    secret = WebhookSecret.parse(new_secret())
    assert repr(secret.key) not in repr(secret)


def test_config_checks_the_secret_and_keeps_it_out_of_its_repr() -> None:
    secret = new_secret()
    config = Config.from_env({"WEBHOOK_SECRET": secret})
    assert config.webhook_secret == secret
    assert secret not in repr(config)
    with pytest.raises(ConfigError, match="WEBHOOK_SECRET: the webhook secret must start"):
        Config.from_env({"WEBHOOK_SECRET": "hunter2"})
