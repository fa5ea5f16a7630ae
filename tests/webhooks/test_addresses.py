"""Which addresses a webhook may reach, and resolving within a deadline."""
from __future__ import annotations

import ipaddress
import socket
import threading
import time

import pytest

from service.webhooks import addresses
from service.webhooks.addresses import ResolutionError, is_forbidden, resolve

FORBIDDEN = [
    "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
    "0.0.0.0", "224.0.0.1", "239.1.1.1", "240.0.0.1", "255.255.255.255", "192.0.2.1", "198.18.0.1",
    "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "2001:db8::1",
    "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "2002:7f00:1::", "64:ff9b::a00:1",
]
PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8", "2002:808:808::"]


@pytest.mark.parametrize("address", FORBIDDEN)
def test_forbidden(address: str) -> None:
    assert is_forbidden(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", PUBLIC)
def test_public(address: str) -> None:
    assert not is_forbidden(ipaddress.ip_address(address))


def test_resolve_gives_every_address_with_what_connect_needs() -> None:
    found = resolve("127.0.0.1", 8080, timeout=5)
    assert [(item.family, item.sockaddr[:2], str(item.address)) for item in found] == [
        (socket.AF_INET, ("127.0.0.1", 8080), "127.0.0.1")
    ]
    assert {str(item.address) for item in resolve("localhost", 80, timeout=5)} <= {"127.0.0.1", "::1"}
    # A literal with the root's trailing dot, which a callback URL may carry, is the literal.
    assert [str(item.address) for item in resolve("127.0.0.1.", 80, timeout=5)] == ["127.0.0.1"]


def test_an_unknown_name_is_a_resolution_error() -> None:
    with pytest.raises(ResolutionError, match="cannot resolve"):
        resolve("no-such-host.invalid", 443, timeout=5)


def test_a_resolver_that_does_not_answer_is_abandoned_at_the_timeout(monkeypatch) -> None:
    answer = threading.Event()

    def slow_getaddrinfo(*args, **kwargs):
        answer.wait(10)
        raise socket.gaierror("too late")

    monkeypatch.setattr(addresses.socket, "getaddrinfo", slow_getaddrinfo)
    started = time.monotonic()
    with pytest.raises(ResolutionError, match="no answer in time"):
        resolve("slow.example", 443, timeout=0.3)
    assert time.monotonic() - started < 2
    answer.set()


@pytest.mark.parametrize(("literal", "family", "sockaddr"), [
    ("127.0.0.1", socket.AF_INET, ("127.0.0.1", 443)),
    ("93.184.216.34", socket.AF_INET, ("93.184.216.34", 443)),
    ("::1", socket.AF_INET6, ("::1", 443, 0, 0)),
    ("::FFFF:169.254.169.254", socket.AF_INET6, ("::ffff:a9fe:a9fe", 443, 0, 0)),
])
def test_an_ip_literal_is_its_own_answer_without_a_lookup(monkeypatch, literal, family, sockaddr) -> None:
    def no_lookup(*args, **kwargs):
        raise AssertionError("an IP literal was looked up")

    monkeypatch.setattr(addresses.socket, "getaddrinfo", no_lookup)
    [found] = resolve(literal, 443, timeout=5)
    assert (found.family, found.sockaddr, found.address) == (family, sockaddr, ipaddress.ip_address(literal))


def test_a_shorthand_ipv4_form_goes_through_the_resolver_and_is_vetted_as_what_it_means() -> None:
    # inet_aton reads "127.1" as 127.0.0.1: the address checked is the one connected to.
    [found] = resolve("127.1", 80, timeout=5)
    assert str(found.address) == "127.0.0.1" and is_forbidden(found.address)
