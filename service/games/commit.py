"""Reading a game and writing a change back: the one load and the one compare-and-set.

``commit`` turns a change (the record before and after, the events) into the store's save
with all of its effects: the events, the turn deadline's schedule, the webhook deliveries,
the player index when the match ends, the idempotent response and the tombstone.
"""
from __future__ import annotations

import base64
import hashlib
import json
import logging
import zlib
from dataclasses import dataclass

from service import rules, tokens
from service.games import notices
from service.games.context import Context
from service.games.errors import Unauthorized, Unprocessable
from service.games.record import Record
from service.rules.evolve import evolve
from service.store.base import Effects, IdempotentResponse, Loaded
from service.store.errors import StoreError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reply:
    """An answer that carries a game: its body and the game version for the ETag.

    ``rated`` marks a view that shows a rated match's rating changes, which come after the
    match's last version: its ETag differs from the one before them (``"17"`` then ``"17.r"``),
    so a client that asks with ``If-None-Match`` gets them rather than a 304."""

    body: dict
    version: int
    rated: bool = False

    @property
    def etag(self) -> str:
        return f"{self.version}.r" if self.rated else str(self.version)


@dataclass(frozen=True)
class Retry:
    """How a client asked for a change to be applied safely.

    ``accept_versions`` is None when the client sent no If-Match (or ``*``), else the
    versions it accepts. ``fingerprint`` identifies the request (method, path, body) so a
    reused Idempotency-Key with another request is refused.
    """

    accept_versions: frozenset[int] | None = None
    idempotency_key: str | None = None
    fingerprint: str = ""


def request_fingerprint(method: str, path: str, body: object) -> str:
    """SHA-256 of the method, the path and the body in canonical JSON."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(f"{method}\n{path}\n{canonical}".encode()).hexdigest()


def parsed(loaded: Loaded) -> Record:
    """The record of a loaded game (a record that cannot be read is the server's fault: it
    propagates as an internal error, logged)."""
    return Record.parse(loaded.state)


def seat_of(record: Record, token: str) -> int:
    """The seat ``token`` plays. Raises Unauthorized for a token that is not one of this game's."""
    seat = tokens.seat_of(tokens.hash_token(token), record.token_hashes)
    if seat is None:
        raise Unauthorized("this token is not a player token of this game")
    return seat


def reply_key(token: str, idempotency_key: str | None) -> str | None:
    """The store key of a client's Idempotency-Key, scoped to its game and seat (its token)."""
    if idempotency_key is None:
        return None
    return hashlib.sha256(f"{tokens.hash_token(token)}\n{idempotency_key}".encode("utf-8", "surrogatepass")).hexdigest()


def stored_reply(key: str, reply: Reply, fingerprint: str, ttl: int, with_body: bool = True) -> IdempotentResponse:
    """What a successful answer leaves under its Idempotency-Key: the body compressed, or none at
    all (``with_body`` False: a retry is answered with the game as it is then)."""
    data: dict = {"v": reply.version, "f": fingerprint}
    if with_body:
        packed = zlib.compress(json.dumps(reply.body, separators=(",", ":")).encode(), 6)
        data["z"] = base64.b64encode(packed).decode()
    return IdempotentResponse(key, json.dumps(data, separators=(",", ":")), ttl)


def replayed(stored: str, fingerprint: str) -> Reply | None:
    """The first answer to a retried request (None: it kept no body, answer afresh).

    Raises Unprocessable(idempotency_key_reused) when the key came with another request."""
    data = json.loads(stored)
    if data["f"] != fingerprint:
        raise Unprocessable("this Idempotency-Key was already used for a different request",
                            field="Idempotency-Key", code="idempotency_key_reused")
    if "z" not in data:
        return None
    return Reply(json.loads(zlib.decompress(base64.b64decode(data["z"]))), data["v"])


def commit(ctx: Context, game_id: str, expected_version: int, before: rules.Match, after: Record,
           events: list[rules.Event], reply: IdempotentResponse | None = None, at: float | None = None) -> None:
    """Save ``after`` over the version the change started from, with every effect. ``at`` is
    the clock reading the engine applied the change at (default: now).

    Raises VersionConflict (another change won), GameExpired, GameMissing, StoreFull, StoreError."""
    match = after.match
    ended = not before.is_finished and match.is_finished
    players = tuple(after.players())
    effects = effects_of(ctx, game_id, after, events, notices.turn_mark(before), ctx.settings.game_ttl_seconds,
                         at=at, index_finish=players if ended else (), index_keep=players, reply=reply)
    ctx.store.save(game_id, expected_version, after.dump(), match.version, effects)
    for event in events:
        if event.seat is not None and event.type.value in _MOVES:
            ctx.metrics.record_move(event.type.value)
    if ended:
        ctx.metrics.record_game_finished(match.variant)
        _archive_events(ctx, game_id)


def _archive_events(ctx: Context, game_id: str) -> None:
    """Compress the events of a match that just ended. The change is saved already: a store
    that fails now only leaves them as they were (and the answer stands)."""
    try:
        ctx.store.archive_events(game_id)
    except StoreError:
        logger.warning("the events of finished game %s stay unarchived: the store failed", game_id)


_MOVES = frozenset(kind.value for kind in rules.ActionType)


def effects_of(ctx: Context, game_id: str, after: Record, events: list[rules.Event], before: notices.TurnMark,
               ttl: int, at: float | None = None, **index_and_reply) -> Effects:
    """What a write of ``after`` does besides the state: its events (stamped with ``at``, the
    clock reading of the change, default now), deadline, webhooks (the turn ``before`` tells
    whether one begins) and, in ``index_and_reply``, the player index and the idempotent response."""
    match = after.match
    # Milliseconds since the creation, floored like the creation time: a replay that applies each
    # action at its recorded time then reproduces the deadlines that the views showed.
    elapsed = max(int((ctx.now() if at is None else at) * 1000) - after.created_at_ms, 0)
    return Effects(
        events=tuple(rules.encode_event(evolve(event, elapsed_ms=elapsed)) for event in events),
        event_count=match.event_count,
        ttl=ttl,
        tombstone_ttl=ctx.settings.tombstone_ttl_seconds,
        timed=match.rules.turn_seconds is not None,
        deadline=deadline_of(match),
        feed=notices.feed(ctx.scope_of(after.owner), after.callback_url,
                          lambda: notices.notices(game_id, after, before, events, ctx.now())),
        **index_and_reply,
    )


def deadline_of(match: rules.Match) -> float | None:
    """When the worker must settle this match: the person to act's deadline, if any."""
    if match.is_finished or match.hand.deadline is None or match.is_bot(match.turn):
        return None
    return match.hand.deadline
