"""Names of the Redis keys of a game and of a shard (see service/ids.py for the shards).

Per game, under the hash tag ``{<game id>}``: ``:s`` (hash: v = version, s = state, f =
creation fingerprint, o = events trimmed, a = archived events, k:<name> = what is kept with the
game such as its analysis, c:<name> = who is computing it), ``:e`` (events), ``:x`` (tombstone),
``:i:<sha256>`` (idempotent responses), and the shard channel ``:n`` (SPUBLISH of the event
count after every write). Per shard, under ``{s<k>}``: ``:outbox`` (webhook deliveries),
``:due`` (turn deadlines), ``:p:<player>:active|finished`` (the player index).
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
    due: str
    outbox: str
    prefix: str  # of this game's idempotent responses

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
    return GameKeys(f"{tag}:s", f"{tag}:e", f"{tag}:x", f"{tag}:n", f"{shard_tag}:due", f"{shard_tag}:outbox",
                    f"{tag}:i:")


def shard_prefix(prefix: str, shard: int) -> str:
    return f"{prefix}{{{ids.shard_tag(shard)}}}"


def index_key(prefix: str, shard: int, player: str, which: str) -> str:
    """A player's index list (``active`` or ``finished``) in one shard."""
    return f"{shard_prefix(prefix, shard)}:p:{player}:{which}"
