"""Use cases: the only layer that knows both the rules engine and the store.

Every request is at most one store read and one store write: an action loads the game
(and any response stored under its idempotency key) in one round trip, applies the move
with the pure engine, and saves the new state, its events and its response in one atomic
compare-and-set on the version. Only this module knows how a game is stored: one compact
JSON text ``{"m": <engine codec>, "t": [SHA-256 of each seat's token]}``.
"""
from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from service import rules, tokens
from service.rules.actions import Action
from service.store.base import GameMissing, GameStore, IdempotentResponse, StoreError, VersionConflict


class UseCaseError(Exception):
    """A request the service refuses before or around the engine; ``code`` is stable."""

    code = "invalid_request"

    def __init__(self, detail: str, field: str | None = None, code: str | None = None):
        super().__init__(detail)
        self.detail = detail
        self.field = field
        if code is not None:
            self.code = code


class Unauthorized(UseCaseError):
    """No valid credential where one is needed (HTTP 401)."""

    code = "unauthorized"

    def __init__(self, detail: str, challenge: str = "Bearer"):
        super().__init__(detail)
        self.challenge = challenge


class PreconditionFailed(UseCaseError):
    """The client's If-Match names another version (HTTP 412)."""

    code = "version_mismatch"


class ConcurrentChange(UseCaseError):
    """Another request changed the game while this move was being applied (HTTP 409)."""

    code = "conflict"


class Unprocessable(UseCaseError):
    """A well-formed request this service will not process (HTTP 422)."""


class Metrics(Protocol):
    """What the use cases report (``service.observability`` implements it)."""

    def record_move(self, kind: str) -> None: ...
    def record_conflict(self) -> None: ...
    def record_store_error(self) -> None: ...
    def record_game_created(self, variant: str) -> None: ...
    def record_game_finished(self, variant: str) -> None: ...


@dataclass(frozen=True)
class Settings:
    """The parts of the configuration the use cases need."""

    game_ttl_seconds: int
    idempotency_ttl_seconds: int
    long_poll_max_seconds: float


@dataclass(frozen=True)
class NewPlayer:
    name: str
    bot: bool = False


@dataclass(frozen=True)
class SeatToken:
    seat: int
    name: str
    token: str


@dataclass(frozen=True)
class Created:
    """A new game: the public view (with ``id``) and each seat's token, shown only now."""

    game_id: str
    view: dict
    players: list[SeatToken]


@dataclass(frozen=True)
class Reply:
    """A response to an action: status, body and the game version for the ETag."""

    status: int
    body: dict
    version: int


@dataclass(frozen=True)
class Retry:
    """How a client asked for an action to be applied safely.

    ``accept_versions`` is None when the client sent no If-Match (or ``*``), else the
    versions it accepts. ``fingerprint`` identifies the request (method, path, body) so a
    reused Idempotency-Key with another request is refused.
    """

    accept_versions: frozenset[int] | None = None
    idempotency_key: str | None = None
    fingerprint: str = ""


@dataclass(frozen=True)
class _Record:
    """The stored form of a game."""

    match: dict
    token_hashes: list[str]

    @classmethod
    def parse(cls, text: str) -> _Record:
        data = json.loads(text)
        return cls(data["m"], data["t"])

    def dump(self) -> str:
        return json.dumps({"m": self.match, "t": self.token_hashes}, separators=(",", ":"))


ACTION_KINDS = {
    rules.Draw: "draw",
    rules.Pass: "pass",
    rules.Discard: "discard",
    rules.Knock: "knock",
    rules.LayOff: "layoff",
    rules.Advise: "advice",
}


def request_fingerprint(method: str, path: str, body: object) -> str:
    """SHA-256 of the method, the path and the body in canonical JSON."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(f"{method}\n{path}\n{canonical}".encode()).hexdigest()


def analyze_hand(cards: Sequence[rules.Card], knock_limit: int) -> dict:
    """The engine's analysis of 10 or 11 cards (for 11, after the best discard).

    Raises InvalidInput (``invalid_card`` naming a repeated card).
    """
    analysis = rules.analyze_hand(cards, knock_limit)
    answer = {
        "deadwood": analysis.deadwood,
        "melds": [[str(card) for card in meld] for meld in analysis.melds],
        "deadwood_cards": [str(card) for card in analysis.deadwood_cards],
        "gin": analysis.gin,
        "can_knock": analysis.can_knock,
    }
    if analysis.best_discard is not None:
        answer["best_discard"] = str(analysis.best_discard)
    return answer


Method = TypeVar("Method", bound=Callable)


def _counts_store_errors(method: Method) -> Method:
    """Report every StoreError that ``method`` lets through to the metrics."""

    @functools.wraps(method)
    def counted(self: GameService, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except StoreError:
            self._metrics.record_store_error()
            raise

    return counted  # type: ignore[return-value]


class GameService:
    """The game use cases over one store."""

    def __init__(self, store: GameStore, settings: Settings, metrics: Metrics):
        self._store = store
        self._settings = settings
        self._metrics = metrics

    @_counts_store_errors
    def check_ready(self) -> None:
        """Raise StoreError unless the store answers now."""
        self._store.check()

    @_counts_store_errors
    def create(self, variant: str, players: Sequence[NewPlayer], options: dict | None, seed: int | None) -> Created:
        """Deal a new match and store it.

        Raises Unprocessable (``bots_not_supported``), InvalidInput, StoreError.
        """
        for seat, player in enumerate(players):
            if player.bot:
                raise Unprocessable(
                    "this server has no bots: every seat needs a person", f"players.{seat}.bot", "bots_not_supported"
                )
        names = [player.name for player in players]
        match, events = rules.new_match(variant, names, rules.rules_for(variant, options), seed)
        seat_tokens = [tokens.new_token() for _ in names]
        record = _Record(rules.encode(match), [tokens.hash_token(t) for t in seat_tokens])
        game_id = tokens.new_game_id()
        self._store.create(
            game_id, record.dump(), match.version, _encoded(events), self._settings.game_ttl_seconds
        )
        self._metrics.record_game_created(variant)
        players = [SeatToken(seat, name, token) for seat, (name, token) in enumerate(zip(names, seat_tokens))]
        return Created(game_id, _with_id(game_id, rules.view_for(match, None)), players)

    @_counts_store_errors
    def view(self, game_id: str, token: str | None) -> Reply:
        """The game as the token's seat (or the public, without a token) sees it.

        Raises GameMissing, Unauthorized (unknown token), StoreError.
        """
        loaded = self._store.load(_known_id(game_id))
        record = _Record.parse(loaded.state)
        viewer = None if token is None else _seat(record, tokens.hash_token(token))
        return Reply(200, _with_id(game_id, rules.view_for(rules.decode(record.match), viewer)), loaded.version)

    @_counts_store_errors
    def hint(self, game_id: str, token: str) -> dict:
        """The engine's suggestion for the token's seat. Raises GameMissing, Unauthorized, Forbidden."""
        record = _Record.parse(self._store.load(_known_id(game_id)).state)
        seat = _seat(record, tokens.hash_token(token))
        return rules.hint_for(rules.decode(record.match), seat)

    @_counts_store_errors
    def events(self, game_id: str, token: str | None, after: int, wait: float) -> dict:
        """Events after ``after`` as the viewer may see them, waiting up to ``wait`` s for one.

        Raises GameMissing, Unauthorized, StoreError. Holds no lock while waiting.
        """
        viewer = None
        if token is not None:
            record = _Record.parse(self._store.load(_known_id(game_id)).state)
            viewer = _seat(record, tokens.hash_token(token))
        wait = min(wait, self._settings.long_poll_max_seconds)
        if wait > 0:
            stored = self._store.wait_for_events(_known_id(game_id), after, wait)
        else:
            stored = self._store.events(_known_id(game_id), after)
        return {
            "events": [rules.redact_event(event, viewer) for event in stored],
            "last_seq": after + len(stored),
        }

    @_counts_store_errors
    def act(self, game_id: str, token: str, action: Action, retry: Retry) -> Reply:
        """Apply the token seat's ``action``: one load, the engine, one compare-and-set save.

        A retry carrying an Idempotency-Key already answered gets that answer again, without
        the move being applied twice. Raises GameMissing, Unauthorized, PreconditionFailed,
        ConcurrentChange, Unprocessable (key reused), the engine's errors, StoreError.
        """
        token_hash = tokens.hash_token(token)
        reply_key = _reply_key(token_hash, retry.idempotency_key)
        loaded = self._store.load(_known_id(game_id), reply_key)
        if loaded.replay is not None:
            return _replayed(loaded.replay, retry.fingerprint)
        record = _Record.parse(loaded.state)
        seat = _seat(record, token_hash)
        _check_precondition(retry, loaded.version)
        match = rules.decode(record.match)
        played, events = rules.apply(match, seat, action)
        reply = Reply(200, _with_id(game_id, rules.view_for(played, seat)), played.version)
        stored_reply = None
        if reply_key is not None:
            stored_reply = IdempotentResponse(
                reply_key, _dump_reply(reply, retry.fingerprint), self._settings.idempotency_ttl_seconds
            )
        try:
            self._store.save(
                game_id,
                loaded.version,
                _Record(rules.encode(played), record.token_hashes).dump(),
                played.version,
                _encoded(events),
                self._settings.game_ttl_seconds,
                stored_reply,
            )
        except VersionConflict:
            self._metrics.record_conflict()
            return self._after_conflict(game_id, reply_key, retry)
        self._metrics.record_move(ACTION_KINDS[type(action)])
        if played.is_finished:
            self._metrics.record_game_finished(match.variant)
        return reply

    def _after_conflict(self, game_id: str, reply_key: str | None, retry: Retry) -> Reply:
        """Answer a lost compare-and-set: the winner's reply if it was this very request."""
        if reply_key is not None:
            replay = self._store.load(game_id, reply_key).replay
            if replay is not None:
                return _replayed(replay, retry.fingerprint)
        if retry.accept_versions is not None:
            raise PreconditionFailed("the game is no longer at the version named in If-Match")
        raise ConcurrentChange("the game changed while your move was applied; reload and retry")


def _known_id(game_id: str) -> str:
    """``game_id`` if it can exist; anything else is missing without asking the store."""
    if not tokens.is_game_id(game_id):
        raise GameMissing(game_id)
    return game_id


def _seat(record: _Record, token_hash: str) -> int:
    seat = tokens.seat_of(token_hash, record.token_hashes)
    if seat is None:
        raise Unauthorized("this token is not a player token of this game")
    return seat


def _check_precondition(retry: Retry, version: int) -> None:
    if retry.accept_versions is not None and version not in retry.accept_versions:
        raise PreconditionFailed(f"the game is at version {version}, not the one named in If-Match")


def _reply_key(token_hash: str, idempotency_key: str | None) -> str | None:
    """The store key of a client's Idempotency-Key, scoped to its game and seat (its token)."""
    if idempotency_key is None:
        return None
    return hashlib.sha256(f"{token_hash}\n{idempotency_key}".encode("utf-8", "surrogatepass")).hexdigest()


def _dump_reply(reply: Reply, fingerprint: str) -> str:
    return json.dumps(
        {"s": reply.status, "b": reply.body, "v": reply.version, "f": fingerprint}, separators=(",", ":")
    )


def _replayed(stored: str, fingerprint: str) -> Reply:
    data = json.loads(stored)
    if data["f"] != fingerprint:
        raise Unprocessable(
            "this Idempotency-Key was already used for a different request",
            field="Idempotency-Key",
            code="idempotency_key_reused",
        )
    return Reply(data["s"], data["b"], data["v"])


def _with_id(game_id: str, view: dict) -> dict:
    return {"id": game_id, **view}


def _encoded(events: list) -> list[str]:
    return [rules.encode_event(event) for event in events]
