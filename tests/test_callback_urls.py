"""Which callback URLs a game may name (WEBHOOK_ALLOWED_HOSTS)."""
from __future__ import annotations

import pytest

from service.config import Config, ConfigError
from service.rules.errors import InvalidInput
from service.callback_urls import MAX_URL_LENGTH, AllowedHosts, AllowedHostsError, check_callback_url

ALLOWED = AllowedHosts.parse(["hooks.example", "HTTP://Plain.Example:8080", "http://dev.example", ""])


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example/gin",
        "https://HOOKS.example.:8443/gin?tenant=1",
        "https://plain.example/x",  # an http entry allows https to the same host too
        "http://plain.example:8080/hook",
        "http://dev.example/hook",
        "http://dev.example:80/hook",
    ],
)
def test_allowed(url: str) -> None:
    assert check_callback_url(url, ALLOWED) == url


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://evil.example/x", "host_not_allowed"),
        ("https://hooks.example.evil.example/x", "host_not_allowed"),
        ("http://hooks.example/x", "host_not_allowed"),  # plain http needs an http:// entry
        ("http://plain.example/x", "host_not_allowed"),  # ... on its port (80 here)
        ("http://plain.example:9090/x", "host_not_allowed"),
        ("http://dev.example:8080/x", "host_not_allowed"),
        ("ftp://hooks.example/x", "scheme"),
        ("hooks.example/x", "malformed"),  # not an absolute URL
        ("https://user:pw@hooks.example/x", "userinfo"),
        ("https://hooks.example@evil.example/x", "userinfo"),
        ("https://hooks.example/x#frag", "fragment"),
        ("https://hooks.example/x#", "fragment"),
        ("https://hooks.example:99999/x", "malformed"),
        ("https://hooks.example:0/x", "malformed"),
        ("https:///x", "malformed"),
        ("https://hooks.example/a b", "malformed"),
        ("https://hooks.example/\x00", "malformed"),
        ("https://hööks.example/", "malformed"),
        ("https://hooks.example/" + "a" * MAX_URL_LENGTH, "too_long"),
    ],
)
def test_refused_with_code_field_and_reason(url: str, reason: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_callback_url(url, ALLOWED)
    error = refused.value
    assert (error.status, error.code, error.field) == (422, "callback_not_allowed", "callback_url")
    assert error.params["reason"] == reason


def test_a_refused_host_is_named_in_params() -> None:
    with pytest.raises(InvalidInput) as refused:
        check_callback_url("http://Evil.Example/x", ALLOWED)
    assert refused.value.params == {"reason": "host_not_allowed", "host": "evil.example", "scheme": "http"}


def test_nothing_is_allowed_by_default() -> None:
    with pytest.raises(InvalidInput):
        check_callback_url("https://hooks.example/x", AllowedHosts.parse(Config.from_env({}).webhook_allowed_hosts))


def test_a_url_that_is_not_text_is_refused() -> None:
    with pytest.raises(InvalidInput, match="string"):
        check_callback_url(42, ALLOWED)


@pytest.mark.parametrize(
    "entry", ["https://hooks.example", "hooks.example:443", "hooks.example/path", "user@hooks.example",
              "http://hooks.example/path", "http://hooks.example:x", "http://", "hooks!.example",
              "*.hooks.example", "http://*.hooks.example:8080"],
)
def test_unreadable_entries_are_refused_at_start_up(entry: str) -> None:
    with pytest.raises(AllowedHostsError, match="WEBHOOK_ALLOWED_HOSTS"):
        AllowedHosts.parse([entry])
    with pytest.raises(ConfigError, match="WEBHOOK_ALLOWED_HOSTS"):
        Config.from_env({"WEBHOOK_ALLOWED_HOSTS": f"ok.example,{entry}"})


def test_a_wildcard_entry_is_refused_with_the_reason() -> None:
    with pytest.raises(AllowedHostsError, match="wildcards are not supported"):
        AllowedHosts.parse(["*.hooks.example"])


def test_an_internationalised_entry_allows_its_ascii_form() -> None:
    # A callback URL must be ASCII, so the entry is kept in the form the URL can match.
    allowed = AllowedHosts.parse(["bücher.example", "http://Bücher.example:8080"])
    for url in ("https://xn--bcher-kva.example/hook", "http://xn--bcher-kva.example:8080/hook"):
        assert check_callback_url(url, allowed) == url


def test_a_refused_ipv6_host_is_shown_bracketed() -> None:
    with pytest.raises(InvalidInput, match=r"https://\[::1\] are not allowed") as refused:
        check_callback_url("https://[::1]/x", ALLOWED)
    assert refused.value.params["host"] == "::1"


def test_port_zero_is_refused_for_its_port() -> None:
    with pytest.raises(InvalidInput, match="port must be from 1 to 65535"):
        check_callback_url("https://hooks.example:0/x", ALLOWED)
