"""A record played again through the engine, one step at a time (docs/records.md, "Replay").

The match is dealt again from the record's own decks (or, to verify them, from its seeds) and
every action is applied at its recorded time, so each position is the match exactly as it
stood after that many actions: the views of a replay are the views the players saw (except
``version``, which a token re-issue also moves and a record does not hold).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from service import rules
from service.records.record import epoch_ms
from service.rules.deals import cut_label, deal_label

SEEDED = "recorded"
# The clock of a step recorded without a time (matches stored before times were kept): its
# turn deadlines are then not those the players saw, but timeouts still replay.
UNKNOWN_TIME = 0.0


class ReplayError(Exception):
    """The record cannot be played: ``where`` names the part of the record (``hands[2].actions[5]``)."""

    def __init__(self, where: str, detail: str) -> None:
        super().__init__(f"{where}: {detail}")
        self.where = where
        self.detail = detail


@dataclass(frozen=True)
class Position:
    """The match after ``step`` actions (0: as dealt), the action of that step and its events."""

    step: int
    match: rules.Match
    action: dict | None = None
    where: str = ""  # the action's place in the record
    events: tuple[rules.Event, ...] = ()


class MissingDeck(KeyError):
    """The engine asked for a deck (by label) that the record does not hold."""


class _Decks(dict):
    def __missing__(self, label: str):
        raise MissingDeck(label)


def recorded_decks(record: dict) -> dict[str, list[rules.Card]]:
    """Every deck the record shows, by label: the cuts' cards, and each deal put back together
    (ten each, one at a time from the non-dealer, the upcard, the stock)."""
    decks = _Decks({cut_label(n): [rules.parse_card(c) for c in cut["cards"]]
                    for n, cut in enumerate(record["cuts"], start=1)})
    for hand in record["hands"]:
        first, second = hand["dealt"][str(hand["non_dealer"])], hand["dealt"][str(hand["dealer"])]
        dealt = [card for pair in zip(first, second) for card in pair]
        decks[deal_label(hand["number"])] = [rules.parse_card(c) for c in dealt + [hand["upcard"]] + hand["stock"]]
    return decks


def dealt(record: dict, decks: Mapping[str, list[rules.Card]] | None) -> rules.Match:
    """The match as dealt, from ``decks`` by label, or (None) from the record's seeds.

    Raises ReplayError for a deck the record lacks, or for a match the rules could not have
    created (players that do not fit the variant, a rule option unknown or out of range);
    KeyError, TypeError or ValueError for a malformed record."""
    fairness = record["fairness"] or {}
    players = record["players"]
    try:
        match, _ = rules.new_match(
            record["variant"], [p["name"] for p in players], rules.rules_for(record["variant"], record["rules"]),
            # Only whether a seed was given shows (the view's ``seeded``): its value is secret.
            SEEDED if record["seeded"] else None, [p["level"] for p in players], _clock(record["created_at"]),
            server_seed=fairness.get("server_seed"), client_seed=fairness.get("client_seed", ""),
            replayed_decks=decks)
    except MissingDeck as missing:
        raise ReplayError("cuts", f"the record holds no cut {missing} (the cuts so far were equal)") from None
    except rules.GameError as refused:
        raise ReplayError(refused.field or "record", f"no match could be created so: {refused.detail}") from None
    return match


def positions(record: dict, derived: bool = False, since: Position | None = None) -> Iterator[Position]:
    """Position 0 (as dealt), then the position after each action, in order; or, from ``since``
    (a position of this record's replay), the positions after it. The decks are the record's
    own, or with ``derived`` those its seeds give (``verify`` compares the two).

    Raises ReplayError for an action the engine refuses or a deck the record lacks."""
    if since is None:
        since = Position(0, dealt(record, None if derived else recorded_decks(record)))
        yield since
    match = since.match
    steps = [(f"hands[{h}].actions[{a}]", action) for h, hand in enumerate(record["hands"])
             for a, action in enumerate(hand["actions"])]
    for step, (where, action) in enumerate(steps[since.step:], start=since.step + 1):
        match, events = _play(match, action, where)
        yield Position(step, match, action, where, tuple(events))


def _play(match: rules.Match, action: dict, where: str) -> tuple[rules.Match, list[rules.Event]]:
    kind = action["type"]
    now = _clock(action["time"])
    try:
        if kind == rules.EventType.TIMEOUT:
            deadline = match.hand.deadline if match.hand is not None else None
            # Times are kept to the millisecond: a timeout recorded in its deadline's own
            # millisecond may read a hair before the deadline's exact clock value.
            return rules.time_out(match, now if deadline is None else max(now, deadline))
        if kind == rules.EventType.ABORT:
            return rules.abort(match)
        fields = {name: value for name, value in action.items() if name not in _COMMON}
        return rules.apply(match, action["seat"], rules.parse_action(kind, fields), now=now, bot=action["bot"])
    except rules.GameError as refused:
        raise ReplayError(where, f"the engine refuses this {kind}: {refused.detail} ({refused.code})") from None
    except MissingDeck as missing:
        raise ReplayError(where, f"the match goes on to the deal {missing}, which the record does not hold") from None


_COMMON = frozenset({"step", "seat", "type", "time", "bot", "timeout"})


def _clock(time: str | None) -> float:
    return UNKNOWN_TIME if time is None else epoch_ms(time) / 1000
