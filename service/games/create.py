"""Creating matches: a new one, the same one again for a retried request, and a rematch.

A retried creation (same Idempotency-Key, same API key) and every player's call for a rematch
must land on one match, even when they race. Both get an id derived from what identifies them
and the store's create keeps the first match under that id; the seats' tokens are derived too,
so the later callers get them again without the service ever storing a token.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace

from service import ids, rules
from service.games import flow
from service.games.commit import deadline_of, effects_of
from service.games.context import Context
from service.games.errors import NotAllowed, TooMany, Unauthorized, Unprocessable
from service.games.record import Record, Seat
from service.store.base import Claim, GameMissing
from service.store.feed import FeedEntry
from service.games.seeds import new_server_seed
from service.tokens import hash_token
from service.callback_urls import check_callback_url

QUOTA_WINDOW_SECONDS = 60


@dataclass(frozen=True)
class NewSeat:
    name: str
    level: str | None = None  # a bot's level; None: a person
    external_id: str | None = None
    metadata: dict | None = None


@dataclass(frozen=True)
class NewGame:
    variant: str
    seats: tuple[NewSeat, ...]
    rules: dict | None = None
    seed: int | None = None
    metadata: dict | None = None
    callback_url: str | None = None
    rated: bool = False
    client_seed: str = ""  # the creator's part of the fair shuffles (seeds.py)


@dataclass(frozen=True)
class SeatToken:
    seat: int
    name: str
    token: str | None  # None: a bot seat (or, in a replay, a token replaced since)


@dataclass(frozen=True)
class Created:
    """A match: its public view (with ``id``) and the seats' tokens, shown only to its creators."""

    game_id: str
    view: dict
    players: list[SeatToken]
    version: int
    new: bool = True  # False: the match existed already (a retried creation, a rematch asked before)


@dataclass(frozen=True)
class Caller:
    """Who asks for a creation: the key id of a valid API key (None: anonymous), the client's
    address (what an anonymous quota counts), and whether this deployment keeps games in
    process (where seeds need no key)."""

    owner: str | None
    address: str
    embedded: bool = False

    @property
    def scope(self) -> str:
        """Whose Idempotency-Keys a creation's key is among: its API key's, or, anonymous, its
        address's (all anonymous callers sharing one scope would let anyone who learns a key
        replay the creation and take its tokens). A key id is hex, so the two never meet."""
        return self.owner or f"-{self.address}"


def create(ctx: Context, new: NewGame, caller: Caller, idempotency_key: str | None = None,
           fingerprint: str = "") -> Created:
    """Deal a new match and store it; a retry with the same Idempotency-Key and body gets the
    same match. Raises Unauthorized, NotAllowed (seed_not_allowed), TooMany
    (creation_quota_exceeded), Unprocessable (no_human_seat, idempotency_key_reused),
    InvalidInput (rules, callback), StoreError."""
    settings = ctx.settings
    if caller.owner is None and not settings.anonymous_create:
        raise Unauthorized("creating a game needs an API key: send it in X-API-Key", challenge='ApiKey header="X-API-Key"')
    if new.seed is not None and caller.owner is None and not caller.embedded:
        raise NotAllowed("a seeded game needs an API key", code="seed_not_allowed", field="seed")
    if all(seat.level is not None for seat in new.seats):
        raise Unprocessable("at least one seat must be a person", code="no_human_seat", field="players")
    if new.rated:
        check_rated(ctx, caller.owner, new.seats)
    match_rules = rules.rules_for(new.variant, new.rules)
    callback = None if new.callback_url is None else check_callback_url(new.callback_url, settings.webhook_allowed_hosts)
    secret = ctx.secret()
    now = ctx.now()
    seed = None if new.seed is None else secret.mixed_seed(new.seed)
    match, events = rules.new_match(new.variant, [seat.name for seat in new.seats], match_rules, seed,
                                    [seat.level for seat in new.seats], now, server_seed=new_server_seed(seed),
                                    client_seed=new.client_seed)
    # Counted only once the request is known to be valid: a refused creation changes nothing.
    if settings.create_quota_per_minute:
        _check_quota(ctx, caller)
    if idempotency_key is None:
        game_id = ids.new_game_id()
        issued = [None if seat.level else secret.new_token(game_id) for seat in new.seats]
    else:
        label = secret.mac("create", caller.scope, idempotency_key)
        game_id = ids.derived_game_id(label, "create")
        issued = _derived_tokens(ctx, game_id, new.seats, "create", caller.scope, idempotency_key)
    seats = tuple(Seat(None if token is None else hash_token(token), seat.external_id, seat.metadata)
                  for seat, token in zip(new.seats, issued))
    record, events = started(ctx, Record(match, seats, caller.owner, new.metadata, callback,
                                         created_at_ms=int(now * 1000), rated=new.rated), events, now)
    created = store_new(ctx, game_id, record, events, fingerprint)
    if created is None:
        ctx.metrics.record_game_created(new.variant)
        return _created(game_id, record, issued)
    existing, stored_fingerprint = created
    if stored_fingerprint != fingerprint:
        raise Unprocessable("this Idempotency-Key was already used for a different request",
                            field="Idempotency-Key", code="idempotency_key_reused")
    return replace(_created(game_id, existing, still_valid(existing, issued)), new=False)


@dataclass(frozen=True)
class Seating:
    """A match that others than its players asked for (quick play, an invite): who sits where,
    under whose API key, and what it takes (``claims``) as it is created."""

    variant: str
    seats: tuple[NewSeat, ...]
    rules: dict
    owner: str | None
    rated: bool
    callback_url: str | None
    label: str  # what the seats' tokens are derived from, with the game id and the seat


def create_seated(ctx: Context, game_id: str, seating: Seating, claims: tuple[Claim, ...],
                  feed: tuple[FeedEntry, ...] = ()) -> Record:
    """Create the match of ``seating`` under ``game_id`` together with its claims, or find it
    made already (the same id is derived by whoever pairs the same tickets). Each person's token
    is ``seat_token(ctx, game_id, label, seat)``. Raises ClaimLost (a claim no longer holds:
    nothing written), StoreError."""
    now = ctx.now()
    match, events = rules.new_match(seating.variant, [seat.name for seat in seating.seats],
                                    rules.rules_for(seating.variant, seating.rules), None,
                                    [seat.level for seat in seating.seats], now, server_seed=new_server_seed(None))
    seats = tuple(Seat(None if seat.level else hash_token(seat_token(ctx, game_id, seating.label, n)),
                       seat.external_id, seat.metadata) for n, seat in enumerate(seating.seats))
    record, events = started(ctx, Record(match, seats, seating.owner, None, seating.callback_url,
                                         created_at_ms=int(now * 1000), rated=seating.rated), events, now)
    found = store_new(ctx, game_id, record, events, claims=claims, feed=feed)
    if found is None:
        ctx.metrics.record_game_created(seating.variant)
        return record
    return found[0]


def seat_token(ctx: Context, game_id: str, label: str, seat: int) -> str:
    """The token of a seat of a match made by quick play or an invite (derived: the ticket and
    the invite hand it out again without the service storing it)."""
    return ctx.secret().derived_token(game_id, label, str(seat))


def current_token(ctx: Context, game_id: str, seat: int, token: str) -> str | None:
    """``token`` if it is still the seat's token (not replaced since); None otherwise, or when the
    match is gone. Raises StoreError."""
    try:
        record = Record.parse(ctx.store.load(game_id).state)
    except GameMissing:
        return None
    return token if record.seats[seat].token_hash == hash_token(token) else None


def check_rated(ctx: Context, owner: str | None, seats: tuple[NewSeat, ...]) -> None:
    """A rated match needs players whose ratings it can keep: an API key to keep them under (or
    the unscoped players of an embedded store), and a distinct external id on every person's seat.

    Raises Unauthorized, Unprocessable (external_id_required, duplicate_external_id)."""
    if ctx.scope_of(owner) is None:
        raise Unauthorized("a rated match needs an API key, under which its players' ratings are kept",
                           challenge='ApiKey header="X-API-Key"')
    people = [(n, seat) for n, seat in enumerate(seats) if seat.level is None]
    for n, seat in people:
        if seat.external_id is None:
            raise Unprocessable(f"seat {n} is a person without an external_id; a rated match needs one on every "
                                "person's seat", code="external_id_required", field="players", params={"seat": n})
    ids_given = [seat.external_id for _, seat in people]
    if len(set(ids_given)) != len(ids_given):
        raise Unprocessable("two seats of a rated match have the same external_id", code="duplicate_external_id",
                            field="players")


def started(ctx: Context, record: Record, events: list[rules.Event],
            now: float | None = None) -> tuple[Record, list[rules.Event]]:
    """A new match played forward to the first person's turn (bots to act first play at once),
    and its events with theirs: what is stored and what the creator is answered. ``now``: the
    clock reading the match was dealt at (its record replays the bots' moves at that time)."""
    match, more = flow.advance(record.match, ctx.now() if now is None else now)
    return record.with_match(match), events + more


def store_new(ctx: Context, game_id: str, record: Record, events: list[rules.Event],
              fingerprint: str = "", claims: tuple[Claim, ...] = (),
              feed: tuple[FeedEntry, ...] = ()) -> tuple[Record, str] | None:
    """Store a ``started`` match under ``game_id`` (taking ``claims``, and appending ``feed``
    entries of others' besides its own).

    Returns None when it was stored, or (the record already there, its fingerprint)."""
    effects = effects_of(ctx, game_id, record, events, None, unstarted_ttl(ctx, record.match),
                         at=record.created_at_ms / 1000, index_add=tuple(record.players()))
    if claims or feed:
        effects = replace(effects, claims=claims, feed=effects.feed + feed)
    found = ctx.store.create(game_id, record.dump(), record.match.version, effects, fingerprint, record.created_at_ms)
    if found is None:
        return None
    return Record.parse(found.state), found.fingerprint


def unstarted_ttl(ctx: Context, match: rules.Match) -> int:
    """How long a match nobody has moved in is kept: ``unstarted_game_ttl_seconds``, counted
    from the first turn's deadline when turns are timed, so that a player who takes the whole
    of a long turn finds the match, and a missed turn is played rather than the match dropped."""
    deadline = deadline_of(match)
    waiting = 0 if deadline is None else max(math.ceil(deadline - ctx.now()), 0)
    return waiting + ctx.settings.unstarted_game_ttl_seconds


def rematch_record(ctx: Context, old: Record, new_id: str) -> tuple[Record, list[rules.Event], list[str | None]]:
    """The next match between the same players, ``started``: same seats, rules, bots, ids,
    metadata, callback and client seed, a fresh server seed and so a fresh cut. Each person's
    token is derived from the hash of their current one."""
    match = old.match
    seed = None if match.seed is None else hashlib.sha256(f"rematch:{match.seed}".encode()).hexdigest()[:32]
    now = ctx.now()
    new_match, events = rules.new_match(match.variant, list(match.names), match.rules, seed, list(match.bots), now,
                                        server_seed=new_server_seed(seed), client_seed=match.client_seed)
    issued = [None if seat.token_hash is None else ctx.secret().derived_token(new_id, "rematch", seat.token_hash)
              for seat in old.seats]
    seats = tuple(Seat(None if token is None else hash_token(token), seat.external_id, seat.metadata)
                  for seat, token in zip(old.seats, issued))
    record = Record(new_match, seats, old.owner, old.metadata, old.callback_url, created_at_ms=int(now * 1000),
                    rated=old.rated)
    record, events = started(ctx, record, events, now)
    return record, events, issued


def _derived_tokens(ctx: Context, game_id: str, seats: tuple[NewSeat, ...], *label: str) -> list[str | None]:
    secret = ctx.secret()
    return [None if seat.level else secret.derived_token(game_id, *label, str(n)) for n, seat in enumerate(seats)]


def still_valid(record: Record, issued: list[str | None]) -> list[str | None]:
    """The derived tokens that are still the seats' tokens (a seat's token may have been replaced)."""
    return [token if token is not None and hash_token(token) == seat.token_hash else None
            for token, seat in zip(issued, record.seats)]


def _created(game_id: str, record: Record, issued: list[str | None]) -> Created:
    match = record.match
    players = [SeatToken(seat, match.names[seat], token) for seat, token in enumerate(issued)]
    return Created(game_id, record.view(game_id, None), players, match.version)


def _check_quota(ctx: Context, caller: Caller) -> None:
    who = f"key:{caller.owner}" if caller.owner else f"addr:{caller.address}"
    quota = ctx.settings.create_quota_per_minute
    if ctx.store.count(f"create:{who}", QUOTA_WINDOW_SECONDS) > quota:
        # The counter is of the clock minute (the store's window): it resets when that ends.
        reset = max(1, math.ceil(QUOTA_WINDOW_SECONDS - ctx.now() % QUOTA_WINDOW_SECONDS))
        raise TooMany(f"at most {quota} games may be created per minute", reset,
                      code="creation_quota_exceeded", params={"limit": quota})
