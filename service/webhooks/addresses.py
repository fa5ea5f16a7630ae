"""Which addresses a webhook may reach, and resolving a host name within a deadline.

A callback host is allowed by name at game creation, but a name can resolve anywhere, and
can change between creation and delivery (DNS rebinding). So each delivery resolves the
name again and refuses it when any address is not a public unicast one: a request to the
cluster's own network, the node's metadata endpoint or loopback must never be made on a
client's behalf.
"""
from __future__ import annotations

import ipaddress
import socket
import threading
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# NAT64 gateways translate 64:ff9b::/96 to the IPv4 address in the low 32 bits.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class ResolutionError(OSError):
    """The name did not resolve (no such host, no answer in time)."""


@dataclass(frozen=True)
class Resolved:
    """One address of a host: what ``socket.connect`` takes, and the parsed address."""

    family: int
    sockaddr: tuple
    address: IPAddress


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address that an IPv6 address stands for (mapped, 6to4, NAT64), if any."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_forbidden(address: IPAddress) -> bool:
    """Whether a webhook must not be sent to ``address``: private, loopback, link-local,
    multicast, reserved, unspecified, or anything else that is not public unicast
    (documentation and shared address space included), also when wrapped in IPv6."""
    inner = embedded_ipv4(address)
    if inner is not None:
        # Where the packets end up is the IPv4 address (Python files the wrapping ranges
        # under "private" or "not global" whatever they wrap).
        return is_forbidden(inner)
    return (
        address.is_private or address.is_loopback or address.is_link_local
        or address.is_multicast or address.is_reserved or address.is_unspecified
        or not address.is_global
    )


def resolve(host: str, port: int, timeout: float) -> list[Resolved]:
    """Every TCP address of ``host`` (a name or an IP literal), in the resolver's order.

    An IP literal is its own answer: no lookup, no thread. For a name, the system resolver
    cannot be given a timeout, so it runs on a helper thread that is abandoned (it ends on
    its own) when no answer comes within ``timeout`` seconds. Raises ResolutionError."""
    # "127.0.0.1." names the same host as "127.0.0.1" (callback URLs may end a host with the
    # root's dot), but no resolver takes it: it is the literal.
    literal = _literal(host.rstrip("."), port)
    if literal is not None:
        return [literal]
    answer: dict[str, object] = {}

    def lookup() -> None:
        try:
            answer["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
        except OSError as error:
            answer["error"] = error

    helper = threading.Thread(target=lookup, name="webhook-resolve", daemon=True)
    helper.start()
    helper.join(timeout)
    if "infos" not in answer:
        error = answer.get("error")
        raise ResolutionError(f"cannot resolve: {error if error else 'no answer in time'}")
    resolved = []
    for family, _, _, _, sockaddr in answer["infos"]:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        resolved.append(Resolved(family, sockaddr, ipaddress.ip_address(sockaddr[0].partition("%")[0])))
    if not resolved:
        raise ResolutionError("cannot resolve: no IPv4 or IPv6 address")
    return resolved


def _literal(host: str, port: int) -> Resolved | None:
    """``host`` as an address when it is an IP literal without a zone (a zone needs the
    resolver to turn the interface name into the index ``connect`` takes)."""
    if "%" in host:
        return None
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if address.version == 4:
        return Resolved(socket.AF_INET, (str(address), port), address)
    return Resolved(socket.AF_INET6, (str(address), port, 0, 0), address)
