"""The truth in Redis after a test: each game decoded with the engine and checked against the
rules' invariants and against the moves the service acknowledged.

The record format is the service's (service/games.py: ``{"m": <engine codec>, "t": [...]}``);
the store is read through its own adapter, so the key layout stays the store's business.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import redis

from service import rules
from service.rules.cards import DECK_SIZE, cards_of
from service.store import RedisStore
from tests.e2e.players import ACTION_EVENTS, Acknowledged

# Events whose change also moves the version on: the moves, a missed turn (the move played for
# the seat then is a version of its own), and ending or following a match.
VERSIONED_EVENTS = (*ACTION_EVENTS, "timeout", "resign", "abort", "rematch")

HAND_SIZE = 10
# The engine's phase values (service/rules/hand.py), as the views spell them.
DISCARD_PHASE = "discard"


@dataclass(frozen=True)
class StoredGame:
    game_id: str
    version: int  # the store's copy of the version (the compare-and-set key)
    record: str  # the raw stored text
    match: rules.Match
    events: list[rules.Event]


def load_game(store: RedisStore, game_id: str) -> StoredGame:
    loaded = store.load(game_id)
    match = rules.decode(json.loads(loaded.state)["m"])
    events = [rules.decode_event(text) for text in store.events(game_id, 0)]
    return StoredGame(game_id, loaded.version, loaded.state, match, events)


def invariant_violations(game: StoredGame, token_reissues: int = 0) -> list[str]:
    """What is wrong with a stored game (empty when nothing): the invariants of docs/rules.md, the
    scores against the scored hands, and the event log against the version (``token_reissues``:
    the seat tokens replaced, each a new version without an event)."""
    match, events = game.match, game.events
    problems = []
    if game.version != match.version:
        problems.append(f"stored version {game.version} but the match says {match.version}")
    if [event.seq for event in events] != list(range(1, len(events) + 1)):
        problems.append("event numbers are not 1..n without gaps")
    if len(events) != match.event_count:
        problems.append(f"{len(events)} events stored, the match counts {match.event_count}")
    changes = len([event for event in events if event.type in VERSIONED_EVENTS]) + token_reissues
    if match.version != 1 + changes:
        problems.append(f"version {match.version} after {changes} changes (expected {1 + changes})")
    scored = [event.public for event in events if event.type == "hand_scored"]
    for seat in range(match.seat_count):
        points = sum(hand["points"] for hand in scored if hand["winner"] == seat)
        won = sum(1 for hand in scored if hand["winner"] == seat)
        if match.scores[seat] != points:
            problems.append(f"seat {seat} has {match.scores[seat]} points, its scored hands sum to {points}")
        if match.hands_won[seat] != won:
            problems.append(f"seat {seat} has won {match.hands_won[seat]} hands, the events say {won}")
    deals = sum(1 for event in events if event.type == "deal")
    if match.deals != deals:
        problems.append(f"{match.deals} deals counted, {deals} deal events")
    if match.is_finished:
        last = [event.type for event in events if event.type != "rematch"][-1]
        if match.hand is not None or last != "match_finished":
            problems.append("a finished match still has a hand or does not end with match_finished")
    else:
        if match.hand is None:
            problems.append("an active match without a hand")
        else:
            problems += _hand_violations(match.hand)
    return problems


def _hand_violations(hand) -> list[str]:
    problems = []
    holdings = {seat: cards_of(hand.holding(seat)) for seat in hand.seats}
    every = [*hand.stock, *hand.pile, *(card for cards in holdings.values() for card in cards)]
    if len(every) != DECK_SIZE or len(set(every)) != DECK_SIZE:
        duplicated = [str(card) for card, count in Counter(every).items() if count > 1]
        problems.append(f"{len(set(every))} distinct cards in {len(every)} places; duplicated: {duplicated}")
    for seat, cards in holdings.items():
        expected = HAND_SIZE + 1 if hand.phase.value == DISCARD_PHASE and seat == hand.turn else HAND_SIZE
        if len(cards) != expected:
            problems.append(f"seat {seat} holds {len(cards)} cards in phase {hand.phase.value} (expected {expected})")
    return problems


def acknowledgement_violations(
    game: StoredGame, acknowledged: Iterable[Acknowledged], complete: bool = True
) -> list[str]:
    """Whether every acknowledged move of ``game`` is in its events exactly once.

    The n-th action event produced version n + 1, so an acknowledged version names the one
    event that must be that very move. Two acknowledgements of one version must be the same
    move (a replayed answer). With ``complete``, every applied move must have been
    acknowledged too (nobody else played, and no answer was lost).
    """
    actions = [event for event in game.events if event.type in ACTION_EVENTS]
    problems = []
    by_version: dict[int, Acknowledged] = {}
    for ack in acknowledged:
        if ack.game_id != game.game_id:
            continue
        earlier = by_version.setdefault(ack.version, ack)
        if (earlier.seat, earlier.move) != (ack.seat, ack.move):
            problems.append(f"version {ack.version} acknowledged for two moves: {earlier} and {ack}")
        index = ack.version - 2
        if not 0 <= index < len(actions):
            problems.append(f"acknowledged version {ack.version} is not stored (stored: {game.version})")
            continue
        mismatch = _event_mismatch(actions[index], ack)
        if mismatch:
            problems.append(f"version {ack.version}: {mismatch}")
    if complete:
        missing = sorted(set(range(2, game.version + 1)) - set(by_version))
        if missing:
            problems.append(f"versions applied but never acknowledged: {missing}")
    return problems


def _event_mismatch(event: rules.Event, ack: Acknowledged) -> str | None:
    if event.type != ack.move.action or event.seat != ack.seat:
        return f"stored {event.type} by seat {event.seat}, acknowledged {ack.move.action} by seat {ack.seat}"
    body = ack.move.body or {}
    stored = {"draw": ("source", "source"), "discard": ("card", "card"), "knock": ("discard", "discard")}
    if event.type in stored:
        sent, kept = stored[event.type]
        if event.public.get(kept) != body.get(sent):
            return f"stored {event.type} {event.public.get(kept)}, acknowledged {body.get(sent)}"
    return None


def untouched_marker(store: RedisStore, game_id: str) -> tuple[int, str, int]:
    """What no refused request may change: the version, the raw record, the event count."""
    loaded = store.load(game_id)
    return loaded.version, loaded.state, len(store.events(game_id, 0))


def key_count(redis_url: str, prefix: str) -> int:
    """How many keys live under ``prefix`` (a refused create must not add any)."""
    with redis.Redis.from_url(redis_url) as client:
        return sum(1 for _ in client.scan_iter(match=f"{prefix}*", count=1000))
