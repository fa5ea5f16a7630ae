"""Names of the Redis keys of a game and of a shard (see service/ids.py for the shards).

Per game, under the hash tag ``{<game id>}``: ``:s`` (hash: v = version, s = state, f =
creation fingerprint, o = events trimmed, a = archived events, k:<name> = what is kept with the
game such as its analysis, c:<name> = who is computing it), ``:e`` (events), ``:x`` (tombstone),
``:i:<sha256>`` (idempotent responses), ``:o`` (hash: the presence marks of the processes
holding a stream or long-poll of a seat, ``<process>:<seat>``), and the shard channel ``:n``
(SPUBLISH of the event count after every write, and of ``p`` after a presence mark). Per
shard, under ``{s<k>}``: ``:feed`` (the internal event stream, webhook deliveries among
its entries: service/store/feed.py), ``:timers`` (service/store/timers.py: a game's turn deadline
is one), ``:p:<player>:active|finished`` (the player index).
Keys of a game and of its shard share a slot, so one script may write both.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from service import ids


@dataclass(frozen=True)
class GameKeys:
    state: str
    events: str
    tombstone: str
    channel: str
    timers: str
    feed: str
    prefix: str  # of this game's idempotent responses
    presence: str

    def reply(self, idempotency_key: str) -> str:
        # Hashed: client keys are arbitrary text and may be long.
        return self.prefix + hashlib.sha256(idempotency_key.encode("utf-8", "surrogatepass")).hexdigest()


def game_keys(prefix: str, game_id: str) -> GameKeys:
    """The keys of ``game_id``. Raises ValueError for an id that is in no shard."""
    shard = ids.shard_of(game_id)
    if shard is None:
        raise ValueError(f"not a game id of this service: {game_id[:40]!r}")
    tag = f"{prefix}{{{game_id}}}"
    shard_tag = shard_prefix(prefix, shard)
    return GameKeys(f"{tag}:s", f"{tag}:e", f"{tag}:x", f"{tag}:n", timers_key(prefix, shard),
                    f"{shard_tag}:feed", f"{tag}:i:", f"{tag}:o")


def shard_prefix(prefix: str, shard: int) -> str:
    return f"{prefix}{{{ids.shard_tag(shard)}}}"


def timers_key(prefix: str, shard: int) -> str:
    """A shard's timers (service/store/timers_redis.py)."""
    return f"{shard_prefix(prefix, shard)}:timers"


def index_key(prefix: str, shard: int, player: str, which: str) -> str:
    """A player's index list (``active`` or ``finished``) in one shard."""
    return f"{shard_prefix(prefix, shard)}:p:{player}:{which}"


@dataclass(frozen=True)
class ClaimKeys:
    """Where a ticket or an invite is kept: its hash (``s`` status, ``v`` version, ``d`` data),
    the channel its changes are published on, and its queue (tickets)."""

    hash: str
    channel: str
    queue: str | None


def ticket_keys(prefix: str, ticket_id: str, queue: str | None = None) -> ClaimKeys:
    """A ticket's keys: its id is placed in its queue's shard, so they share that slot."""
    tag = f"{prefix}{{{ticket_id}}}"
    shard = ids.shard_of(ticket_id)
    return ClaimKeys(f"{tag}:t", f"{tag}:n", None if queue is None or shard is None else queue_key(prefix, shard, queue))


def queue_key(prefix: str, shard: int, queue: str) -> str:
    """A quick-play queue: its waiting tickets scored by when they were queued (ms)."""
    return f"{shard_prefix(prefix, shard)}:q:{queue}"


def invite_keys(prefix: str, code: str) -> ClaimKeys:
    """An invite's keys, in the shard its code names."""
    base = f"{shard_prefix(prefix, ids.shard_of_name(code))}:inv:{code}"
    return ClaimKeys(base, f"{base}:n", None)


def claim_keys(prefix: str, kind: str, claim_id: str, queue: str | None) -> ClaimKeys:
    return ticket_keys(prefix, claim_id, queue) if kind == "ticket" else invite_keys(prefix, claim_id)


def scope_key(prefix: str, scope: str, name: str) -> str:
    """A key of one API key's own (its players' open tickets, its invites, its stream)."""
    return f"{prefix}{{k:{scope}}}:{name}"
