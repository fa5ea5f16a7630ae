"""The feed: the internal event stream that consumers of what happened read, each on its own.

A save that changes a match (or a ticket) appends typed entries to its shard's feed in the
same atomic step as the change itself (``Effects.feed``), so an entry exists if and only if
the change does. Each consumer reads the feed in a group of its own: every group sees every
entry, and within a group each entry goes to one reader until it is acknowledged. A reader
that dies leaves its entries pending; another takes them over after a lease
(``claim_stale``). The ratings and the API keys' streams apply what they read idempotently
(keyed by the entry's ``id``), so an entry read twice changes nothing the second time:
together this is exactly once. The webhook deliveries (service/webhooks, group ``delivery``)
read the same entries on Redis; a receiver may get one twice and drops it by its id.

Entries stay until every group has acknowledged them (``trim``), and at most
``FEED_MAX_LENGTH`` per shard are kept whatever happens, so a consumer that never runs
cannot make the feed grow without bound.
"""
from __future__ import annotations

import abc
import json
from collections.abc import Sequence
from dataclasses import dataclass

# The group in which the worker reads the feed for webhooks (service/webhooks): the only group
# the game store must know of (RedisStore makes sure it exists before writing a webhook).
DELIVERY_GROUP = "delivery"
# Entries kept per shard at most (the oldest go first, approximately): a bound on what a
# stopped consumer lets pile up.
FEED_MAX_LENGTH = 100_000
ENTRY_FIELDS = ("id", "kind", "subject", "type", "owner", "body")
# Written by every save since webhooks are delivered from the feed; an entry of an older
# version has none (nothing to deliver).
URL_FIELD = "url"
# The owner of an entry that only a webhook wants (its match has no key to stream to and is
# not rated): the other consumers skip it.
NO_OWNER = ""


class MalformedFeedEntry(ValueError):
    """A feed entry without the fields every entry has."""


@dataclass(frozen=True)
class FeedEntry:
    """One thing that happened: ``type`` of the ``kind`` (game, ticket) ``subject`` (its id),
    for the API key ``owner`` (its key id; ``-``: created without a key on the embedded store;
    ``NO_OWNER``: nobody's), with ``body`` the JSON text of its payload (the webhook body of
    that event), to be delivered to ``url`` (the integrator's callback URL; empty: none).
    ``id`` is stable: the same event always has the same id, and consumers de-duplicate on it
    (it is the webhook-id of its delivery)."""

    id: str
    kind: str
    subject: str
    type: str
    owner: str
    body: str
    url: str = ""

    def fields(self) -> list[str]:
        """Field names and values, as a stream entry holds them (always all seven)."""
        return [value for name in (*ENTRY_FIELDS, URL_FIELD) for value in (name, getattr(self, name))]

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> FeedEntry:
        """Raises MalformedFeedEntry."""
        missing = [name for name in ENTRY_FIELDS if not isinstance(fields.get(name), str)]
        if missing:
            raise MalformedFeedEntry(f"feed entry without {', '.join(missing)}")
        url = fields.get(URL_FIELD, "")
        return cls(*(fields[name] for name in ENTRY_FIELDS), url=url if isinstance(url, str) else "")

    @property
    def owned(self) -> bool:
        """Whether the entry belongs to a key's players (else only its webhook wants it)."""
        return self.owner != NO_OWNER

    def payload(self) -> dict:
        return json.loads(self.body)


@dataclass(frozen=True)
class Read:
    """An entry as a group's reader got it: where it sits (shard, stream id) and what it is."""

    shard: int
    stream_id: str
    entry: FeedEntry


class Feed(abc.ABC):
    """Reading the feed in consumer groups. Every method raises StoreError when the backend fails."""

    @abc.abstractmethod
    def append(self, shard: int, entries: tuple[FeedEntry, ...]) -> None:
        """Append entries outside of a game's save (what a consumer produces in turn)."""

    @abc.abstractmethod
    def reader_shards(self) -> list[tuple[int, ...]]:
        """How to split the shards between blocking readers: each tuple is read by one."""

    @abc.abstractmethod
    def read(self, group: str, consumer: str, count: int, block_seconds: float,
             shards: Sequence[int] | None = None) -> list[Read]:
        """Up to ``count`` entries of each of ``shards`` (all: None) new to ``group``, waiting up to
        ``block_seconds`` for one. They stay pending for ``consumer`` until acknowledged."""

    @abc.abstractmethod
    def ack(self, group: str, reads: list[Read]) -> None:
        """``group`` is done with these entries."""

    @abc.abstractmethod
    def claim_stale(self, group: str, consumer: str, idle_seconds: float, count: int,
                    shards: Sequence[int] | None = None) -> list[Read]:
        """Entries pending in ``group`` for longer than ``idle_seconds`` (their reader died), now
        pending for ``consumer``."""

    @abc.abstractmethod
    def trim(self, groups: tuple[str, ...]) -> int:
        """Drop the entries that every one of ``groups`` has acknowledged; returns how many."""
