"""Matches played to their end through the use cases (``GameService``) on a real store, with
the service's clock moved by hand, and records of scripted matches built straight from the
engine. The people's moves come from a policy (a bot level, or any function of the match)."""
from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from service import bots, rules
from service.games import Caller, Context, GameService, NewGame, NewSeat, Retry, Settings
from service.games.record import Record
from service.games.setup import Uncounted
from service.records.record import build_record
from service.records.service import RecordService
from service.rules.deals import cut_label, deal_label
from service.store.base import GameStore
from service.store.memory import MemoryStore

SECRET = "records-tests-server-secret-0123456789abcdef"
START = 1_900_000_000.0004  # a fixed moment (2030), off the millisecond, as real clocks are
OWNER = "0" * 32
SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "record.schema.json"
Policy = Callable[[rules.Match, int], rules.TurnAction]


class Clock:
    """The service's clock: moved by each move, never slept."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def level_policy(level: str) -> Policy:
    """A person who plays as the bot ``level`` would."""
    return lambda match, seat: bots.choose(level, rules.observe(match, seat))


@dataclass
class Played:
    games: GameService
    records: RecordService
    store: GameStore
    clock: Clock
    game_id: str
    tokens: list[str | None]
    views: list[tuple[int | None, dict]] = field(default_factory=list)  # every answer: (viewer, view)

    def match(self) -> rules.Match:
        return self.stored().match

    def stored(self) -> Record:
        return Record.parse(self.store.load(self.game_id).state)

    def record(self) -> dict:
        return self.records.record(self.game_id)


def context(store: GameStore | None = None, clock: Clock | None = None) -> Context:
    return Context(store or MemoryStore(), Settings(), Uncounted(), SECRET, clock=clock or Clock())


def start(variant: str, levels: list[str | None], *, seed: int | None = None, client_seed: str = "",
          rules_: dict | None = None, store: GameStore | None = None, clock: Clock | None = None) -> Played:
    """A new match (``levels``: a bot level per seat, None for a person)."""
    ctx = context(store, clock)
    games = GameService(ctx)
    seats = tuple(NewSeat(f"P{n}", level) for n, level in enumerate(levels))
    created = games.create(NewGame(variant, seats, rules_, seed, client_seed=client_seed),
                           Caller(OWNER, "203.0.113.7", embedded=True))
    played = Played(games, RecordService(ctx, 0), ctx.store, ctx.clock, created.game_id,
                    [p.token for p in created.players])
    played.views.append((None, created.view))
    return played


def play_to_end(played: Played, policy: Policy, rng: random.Random | None = None, tick: tuple[float, float] = (0.3, 9),
                timeout_every: int = 0, max_moves: int = 3000) -> Played:
    """Play the people's moves with ``policy`` until the match is over. Each move comes ``tick``
    seconds (drawn) after the last; with ``timeout_every`` k, every k-th wait is past the turn
    deadline instead, so that the service plays that turn (read first, as a spectator would)."""
    rng = rng or random.Random(5)
    for move in range(max_moves):
        match = played.match()
        if match.is_finished:
            return played
        if timeout_every and move % timeout_every == timeout_every - 1 and match.hand.deadline is not None:
            played.clock.now = match.hand.deadline + rng.uniform(0, 3)
            played.views.append((None, played.games.view(played.game_id, None).body))
            continue
        played.clock.now += rng.uniform(*tick)
        seat = match.turn
        reply = played.games.act(played.game_id, played.tokens[seat], policy(match, seat), Retry())
        played.views.append((seat, reply.body))
    raise AssertionError("the match did not end")


def finished(variant: str, levels: list[str | None], policy: Policy | None = None, **options) -> Played:
    """A match played to its end (``options`` as ``start``'s and ``play_to_end``'s)."""
    playing = {name: options.pop(name) for name in ("rng", "tick", "timeout_every") if name in options}
    return play_to_end(start(variant, levels, **options), policy or level_policy("standard"), **playing)


def schema() -> dict:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


# --- scripted matches, straight from the engine --------------------------------------------------

def scripted_record(variant: str, decks: dict[str, list[rules.Card]], moves: list[tuple[int, object]],
                    levels: list[str | None] | None = None, rules_: dict | None = None) -> dict:
    """The record of a match dealt from ``decks`` (by label) and played by ``moves``, in order:
    (seat, action) pairs, or (seat, "bot") for the bot's own choice. Its times are unknown."""
    names = [f"P{n}" for n in range(rules.SEATS[variant])]
    match, events = rules.new_match(variant, names, rules.rules_for(variant, rules_), None, levels,
                                    replayed_decks=decks)
    for seat, action in moves:
        bot = action == "bot"
        chosen = bots.choose(match.bots[seat], rules.observe(match, seat)) if bot else action
        match, more = rules.apply(match, seat, chosen, bot=bot)
        events += more
    assert match.is_finished, "a scripted match must end"
    return build_record("g_" + "A" * 22, match, 0, events)


def decks_for(cut: list[str], deals: list[list[rules.Card]]) -> dict[str, list[rules.Card]]:
    return {cut_label(1): [rules.parse_card(c) for c in cut],
            **{deal_label(n): deck for n, deck in enumerate(deals, start=1)}}
