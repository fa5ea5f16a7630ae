"""The Redis keys of a shard's webhook queues, and the entries that travel through them.

Per shard ``k`` (hash tag ``s<k>``, see service/ids.py), under the key prefix P:

- ``P{s<k>}:feed`` stream: the internal event stream (service/store/feed.py), which the save
  that produces an event appends to. The worker reads it in its group ``delivery``; an entry
  with a ``url`` is delivered there: its ``id`` is the webhook-id (stable across retries),
  its ``body`` the exact JSON text that is signed and sent. The others are acknowledged
  unread. Other groups read the same entries; the feed is trimmed once all are done.
- ``P{s<k>}:outbox`` stream: where versions before the feed wrote one entry per delivery
  (fields ``id``, ``url``, ``body``, ``game``, ``type``); still read, in the same group, so
  that what an older process wrote during a rolling deploy goes out too. Its entries are
  deleted once finished.
- ``P{s<k>}:retry`` sorted set: deliveries waiting for another attempt; member = the JSON
  of ``Delivery.retry_member``, score = when it is due (seconds since the epoch).
- ``P{s<k>}:dead`` stream: deliveries that will not be tried again, with the reason.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import NamedTuple

from service import ids
from service.store.feed import DELIVERY_GROUP, FeedEntry, MalformedFeedEntry
from service.store.keys import shard_prefix

GROUP = DELIVERY_GROUP
ENTRY_FIELDS = ("id", "url", "body", "game", "type")
EVENT_TYPES = frozenset({"turn", "hand_over", "match_over", "timeout", "rating_changed", "ticket_matched"})


# Where a held delivery was read: a shard's feed, its outbox (older versions), its retry set.
FEED, OUTBOX, RETRY = "feed", "outbox", "retry"


class MalformedEntry(ValueError):
    """A read entry or retry member without the fields a delivery needs."""


@dataclass(frozen=True)
class ShardKeys:
    """The keys of one shard's queues."""

    shard: int
    outbox: str
    retry: str
    dead: str
    feed: str

    @classmethod
    def of(cls, prefix: str, shard: int) -> ShardKeys:
        tag = shard_prefix(prefix, shard)
        return cls(shard, f"{tag}:outbox", f"{tag}:retry", f"{tag}:dead", f"{tag}:feed")

    def stream(self, source: str) -> str:
        """The stream an entry of ``source`` (FEED or OUTBOX) was read from."""
        return self.feed if source == FEED else self.outbox

    @classmethod
    def for_game(cls, prefix: str, game_id: str) -> ShardKeys:
        """The keys of the shard of ``game_id`` (same slot as the game's own keys).

        Raises ValueError for an id that belongs to no shard."""
        shard = ids.shard_of(game_id)
        if shard is None:
            raise ValueError(f"not a game id of any shard: {game_id!r}")
        return cls.of(prefix, shard)


class Held(NamedTuple):
    """A stream entry this worker read and holds until it finishes it: ``source`` FEED or
    OUTBOX, with its raw fields."""

    shard: int
    source: str
    stream_id: str
    fields: dict[str, str]

    @property
    def url(self) -> str:
        return self.fields.get("url", "")

    def delivery(self) -> Delivery:
        """Raises MalformedEntry."""
        if self.source == OUTBOX:
            return Delivery.from_stream(self.stream_id, self.fields)
        try:
            entry = FeedEntry.from_fields(self.fields)
        except MalformedFeedEntry as error:
            raise MalformedEntry(str(error)) from None
        return Delivery.of_entry(entry, self.stream_id)


@dataclass(frozen=True)
class Delivery:
    """One event on its way to a receiver, at ``attempt`` (1 for the first try); ``game`` is
    what it is about (a game's id; a ticket's for ``ticket_matched``).

    ``stream_id`` is the id of the entry it was read as: its first part is the time (ms) the
    event was saved, from which the delivery latency is measured."""

    webhook_id: str
    url: str
    body: str
    game: str
    type: str
    stream_id: str
    attempt: int = 1
    postponed: int = 0  # times this attempt was put off (worker.py, receivers' shares)

    @classmethod
    def of_entry(cls, entry: FeedEntry, stream_id: str) -> Delivery:
        """The first attempt of a feed entry that carries a URL, read as ``stream_id``."""
        return cls(entry.id, entry.url, entry.body, entry.subject, entry.type, stream_id)

    @classmethod
    def from_stream(cls, stream_id: str, fields: dict[str, str]) -> Delivery:
        """The first attempt of an outbox entry (or of a retry member's fields). Raises MalformedEntry."""
        missing = [name for name in ENTRY_FIELDS if not isinstance(fields.get(name), str)]
        if missing:
            raise MalformedEntry(f"outbox entry without {', '.join(missing)}")
        return cls(fields["id"], fields["url"], fields["body"], fields["game"], fields["type"], stream_id)

    @classmethod
    def from_retry_member(cls, member: str) -> Delivery:
        """The delivery a retry member holds. Raises MalformedEntry."""
        try:
            data = json.loads(member)
            delivery = cls.from_stream(data["sid"], data)
            attempt, postponed = data["attempt"], data.get("postponed", 0)
        except (ValueError, KeyError, TypeError) as error:
            raise MalformedEntry(f"retry member is not a delivery: {type(error).__name__}") from None
        if not isinstance(attempt, int) or attempt < 1:
            raise MalformedEntry("retry member without a valid attempt number")
        if not isinstance(postponed, int) or postponed < 0:
            raise MalformedEntry("retry member with an invalid count of postponements")
        return cls(**{**delivery.__dict__, "attempt": attempt, "postponed": postponed})

    def retry_member(self) -> str:
        """The retry member of this delivery's next attempt."""
        return self._member(self.attempt + 1, 0)

    def postponed_member(self) -> str:
        """The retry member of this attempt, put off (once more) before it was made."""
        return self._member(self.attempt, self.postponed + 1)

    def _member(self, attempt: int, postponed: int) -> str:
        member = {**self.fields(), "sid": self.stream_id, "attempt": attempt}
        if postponed:
            member["postponed"] = postponed
        return json.dumps(member, separators=(",", ":"), sort_keys=True)

    def fields(self) -> dict[str, str]:
        """What a retry member and a dead letter hold of it."""
        return {"id": self.webhook_id, "url": self.url, "body": self.body, "game": self.game, "type": self.type}

    @property
    def enqueued_at(self) -> float:
        """When the event was saved, in seconds since the epoch (0 if unknown)."""
        milliseconds, _, _ = self.stream_id.partition("-")
        return int(milliseconds) / 1000 if milliseconds.isdigit() else 0.0

    @property
    def metric_type(self) -> str:
        """``type`` when it is a known event type, else ``other`` (bounded metric labels)."""
        return self.type if self.type in EVENT_TYPES else "other"
