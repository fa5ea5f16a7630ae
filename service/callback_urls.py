"""Which callback URLs a game may name: only hosts the operator listed.

WEBHOOK_ALLOWED_HOSTS is a comma-separated list. An entry ``hooks.example`` allows
``https://hooks.example`` on any port; an entry ``http://hooks.example[:port]`` also allows
plain http to that host on that port (80 when none is written). Anything else is refused at
game creation, before a single request is sent: the check here is the first line against
requests to places the operator never meant (the worker checks the resolved addresses again
at each delivery).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from service.rules.errors import InvalidInput, declare

MAX_URL_LENGTH = 2048
CODE = "callback_not_allowed"
declare(InvalidInput.status, CODE, "Callback URL not allowed")
FIELD = "callback_url"
HTTP_DEFAULT_PORT = 80
# What a host name or IP literal is made of, once lower-cased and in ASCII.
HOST_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-_:")


class AllowedHostsError(ValueError):
    """An entry of WEBHOOK_ALLOWED_HOSTS that is neither ``host`` nor ``http://host[:port]``."""


def _normal_host(host: str) -> str:
    # Host names are case-insensitive, and "example.com." is the same host as "example.com".
    return host.lower().rstrip(".")


@dataclass(frozen=True)
class AllowedHosts:
    """The parsed WEBHOOK_ALLOWED_HOSTS; build it once with ``AllowedHosts.parse``.

    ``https`` holds every allowed host (https is allowed to all of them);
    ``http`` holds the (host, port) pairs that plain http may reach."""

    https: frozenset[str] = frozenset()
    http: frozenset[tuple[str, int]] = frozenset()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowedHosts:
        """Parse the entries (already split on commas; blank ones are skipped).

        Raises AllowedHostsError naming the first entry it cannot read."""
        https: set[str] = set()
        http: set[tuple[str, int]] = set()
        for entry in (entry.strip() for entry in entries):
            if not entry:
                continue
            if "://" in entry:
                host, port = _http_entry(entry)
                http.add((host, port))
            else:
                host = _bare_entry(entry)
            https.add(host)
        return cls(frozenset(https), frozenset(http))

    def allows(self, scheme: str, host: str, port: int | None) -> bool:
        """Whether a URL of ``scheme`` to ``host`` (``port`` None: the default) is allowed."""
        host = _normal_host(host)
        if scheme == "https":
            return host in self.https
        return scheme == "http" and (host, port or HTTP_DEFAULT_PORT) in self.http


def _bare_entry(entry: str) -> str:
    parts = urlsplit(f"https://{entry}")
    if parts.hostname is None or parts.netloc != entry or parts.port is not None or "@" in entry:
        raise _unreadable(entry)
    return _entry_host(entry, parts.hostname)


def _http_entry(entry: str) -> tuple[str, int]:
    parts = urlsplit(entry)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if (
        parts.scheme != "http" or not parts.hostname or "@" in parts.netloc or port == -1
        or parts.path not in ("", "/") or parts.query or parts.fragment
    ):
        raise _unreadable(entry)
    return _entry_host(entry, parts.hostname), port or HTTP_DEFAULT_PORT


def _entry_host(entry: str, host: str) -> str:
    """The host of an entry as callback URLs are compared with it: an internationalised name
    in its ASCII (punycode) form, since a callback URL must be ASCII. An entry that no URL
    could ever match (a wildcard, characters no host name has) is refused rather than kept."""
    if "*" in host:
        raise _unreadable(entry, "; wildcards are not supported, list every host")
    try:
        host = _normal_host(host.encode("idna").decode("ascii"))
    except UnicodeError:
        raise _unreadable(entry) from None
    if not set(host) <= HOST_CHARACTERS:
        raise _unreadable(entry)
    return host


def _unreadable(entry: str, why: str = "") -> AllowedHostsError:
    return AllowedHostsError(f"WEBHOOK_ALLOWED_HOSTS entry {entry!r} must be a host name, or http://host[:port]{why}")


def check_callback_url(url: object, allowed_hosts: AllowedHosts) -> str:
    """Return ``url`` when a game may send its webhooks there.

    Raises InvalidInput (422, code ``callback_not_allowed``, field ``callback_url``) with
    ``params.reason`` one of ``too_long``, ``malformed``, ``scheme``, ``userinfo``,
    ``fragment``, ``host_not_allowed`` (then ``params.host`` and ``params.scheme`` too)."""
    if not isinstance(url, str):
        raise _refused("the callback URL must be a string", "malformed")
    if len(url) > MAX_URL_LENGTH:
        raise _refused(
            f"the callback URL is longer than {MAX_URL_LENGTH} characters", "too_long",
            max_length=MAX_URL_LENGTH,
        )
    parts = _split(url)
    if parts.scheme not in ("http", "https"):
        raise _refused("the callback URL must be an https (or allowed http) URL", "scheme")
    if "@" in parts.netloc:
        raise _refused("the callback URL must not carry a user name or password", "userinfo")
    if "#" in url:
        raise _refused("the callback URL must not have a fragment", "fragment")
    if not allowed_hosts.allows(parts.scheme, parts.hostname, parts.port):
        host = _normal_host(parts.hostname)
        shown = f"[{host}]" if ":" in host else host  # an IPv6 literal, bracketed as in the URL
        raise _refused(
            f"callbacks to {parts.scheme}://{shown} are not allowed by this server's configuration",
            "host_not_allowed", host=host, scheme=parts.scheme,
        )
    return url


def _split(url: str) -> SplitResult:
    """The parts of an absolute URL with a host, or InvalidInput (reason ``malformed``)."""
    # Control characters and spaces are never part of a valid URL; some HTTP stacks would
    # strip them, others send them as they are.
    if any(ord(char) <= 0x20 or ord(char) == 0x7F for char in url) or not url.isascii():
        raise _refused("the callback URL must be an absolute URL of printable ASCII", "malformed")
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for a port out of range or not a number
    except ValueError:
        raise _refused("the callback URL is not a valid URL", "malformed") from None
    if not parts.hostname:
        raise _refused("the callback URL must be an absolute URL with a host", "malformed")
    if port == 0:
        raise _refused("the callback URL's port must be from 1 to 65535", "malformed")
    return parts


def _refused(detail: str, reason: str, **params: object) -> InvalidInput:
    return InvalidInput(detail, code=CODE, field=FIELD, params={"reason": reason, **params})
