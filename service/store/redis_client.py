"""redis-py clients from the service's Redis URLs: one server, or a Redis Cluster.

``redis://``, ``rediss://`` and ``unix://`` URLs name one server; ``redis+cluster://`` and
``rediss+cluster://`` (or any of the first two with ``?cluster=true``) name any node of a
cluster. Every process that talks to the service's Redis (the API, the webhook worker)
builds its client here, so they all accept the same URLs.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from redis import Redis
from redis.cluster import RedisCluster

SCHEMES = ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster")
CLUSTER_SUFFIX = "+cluster"


def split_cluster_flag(url: str) -> tuple[str, bool]:
    """The URL as redis-py reads it, and whether it names a cluster.

    Raises ValueError for a scheme this module does not serve (naming only the scheme:
    the rest of a URL may hold a password)."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(f"not a Redis URL scheme: {parts.scheme!r}")
    query = parse_qsl(parts.query, keep_blank_values=True)
    is_cluster = parts.scheme.endswith(CLUSTER_SUFFIX) or any(
        name == "cluster" and value.lower() in ("true", "yes", "1") for name, value in query
    )
    scheme = parts.scheme.removesuffix(CLUSTER_SUFFIX)
    kept = urlencode([(name, value) for name, value in query if name != "cluster"])
    # Built by hand: urlunsplit drops the "//" of "unix:///path", whose netloc is empty.
    return f"{scheme}://{parts.netloc}{parts.path}{'?' if kept else ''}{kept}", is_cluster


def client_from_url(url: str, **options: Any) -> Redis | RedisCluster:
    """A client (with its connection pool) for ``url``; ``options`` go to redis-py.

    A single-server client does not connect until its first command; a cluster client asks
    the cluster for its layout at once and raises redis-py's error when nobody answers.
    Raises ValueError for a URL of another scheme."""
    plain_url, is_cluster = split_cluster_flag(url)
    return (RedisCluster if is_cluster else Redis).from_url(plain_url, **options)
