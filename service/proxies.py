"""The client's address behind a known number of trusted proxies.

Behind an ingress every request arrives from the ingress, so counting per remote address would
put every anonymous client into one bucket. Each trusted proxy appends the address it received
the request from to ``X-Forwarded-For``; with ``TRUSTED_PROXY_HOPS = n`` the n-th entry from
the right is the client as the outermost trusted proxy saw it (werkzeug's ``ProxyFix``).
Entries further left are whatever the client wrote and are never used. With 0 (no proxy) the
header is ignored, so a client reaching the service directly cannot choose its address.
"""
from __future__ import annotations

import ipaddress

import flask
from werkzeug.middleware.proxy_fix import ProxyFix

# An IPv6 client usually holds a whole /64 and can pick any address in it: counting per
# address would give it 2^64 buckets.
IPV6_CLIENT_PREFIX = 64
UNKNOWN_ADDRESS = "unknown"


def trust_proxies(app: flask.Flask, hops: int) -> None:
    """Make ``request.remote_addr`` the client's address as the outermost of ``hops`` trusted
    proxies saw it (0: leave the peer address alone).

    Only X-Forwarded-For is taken: the scheme (X-Forwarded-Proto) is gunicorn's business
    (FORWARDED_ALLOW_IPS), and the host and prefix are never taken from a header."""
    if hops:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=0, x_host=0, x_port=0, x_prefix=0)


def client_address(request: flask.Request) -> str:
    """The address that counts as one client: the IPv4 address, the /64 network of an IPv6
    address (an IPv4-mapped one counts as its IPv4 address), or ``unknown``."""
    raw = (request.remote_addr or "").strip()
    try:
        address = ipaddress.ip_address(raw)
    except ValueError:
        return UNKNOWN_ADDRESS
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_CLIENT_PREFIX), strict=False))
    return str(address)
