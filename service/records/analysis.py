"""What the ``strong`` policy would have done at each decision of a person (docs/records.md,
"Analysis").

A decision is a turn action that a person chose: a draw, a pass, a discard, a knock or a
lay-down; not a bot's move, not a move the service played after a missed deadline, not the
sitter's advice, not a resignation. At each, the record is replayed to the position the person
faced and the strong policy is asked what it would play there, seeing what that seat saw.

- **Agreement**: the same kind of action and the same card (the draw's source, the card
  discarded, the knock's discard; a knock's melds do not count); a lay-down agrees when it
  leaves the least deadwood the engine can find.
- **Missed knocks and gins**: at a discard, a gin was open when some allowed discard left no
  deadwood, a knock when one left deadwood within the knock limit. Discarding without knocking
  misses the gin (when one was open) or else the knock; knocking with deadwood misses an open gin.
- Per seat, from the hands' results: the deadwood caught when the other player knocked (after
  lay-offs), and undercuts suffered (knocks that the defender undercut).
"""
from __future__ import annotations

from service import bots, rules
from service.records import replay

FORMAT = "ginrummy-analysis/1"
POLICY = bots.Level.STRONG
# The strong policy takes about 2 ms a decision here (bench/analysis.py: 240 decisions per match
# at the median, 659 at most over 200 matches of people only): past this many, the analysis
# stops, so that no match costs more than about 2 s. Only a match far longer than any of those
# reaches it; its analysis then says ``complete: false``.
MAX_DECISIONS = 800
TURN_TYPES = frozenset(kind.value for kind in rules.TURN_ACTIONS)
GIN, KNOCK = "gin", "knock"


def is_decision(match: rules.Match, action: dict) -> bool:
    """Whether ``action`` was a person's own choice of a turn action."""
    return (action["type"] in TURN_TYPES and not action["bot"] and not action["timeout"]
            and not match.is_bot(action["seat"]))


def analyse(record: dict) -> dict:
    """The analysis of ``record`` (a finished or aborted match). Raises ReplayError for a record
    the engine cannot replay."""
    decisions: list[dict] = []
    positions = replay.positions(record)
    before = next(positions).match
    complete = True
    for position in positions:
        if is_decision(before, position.action):
            if len(decisions) == MAX_DECISIONS:
                complete = False
                break
            decisions.append(_decision(before, position))
        before = position.match
    return {"format": FORMAT, "id": record["id"], "policy": POLICY.value, "complete": complete,
            "decisions": decisions, "seats": [_summary(record, player, decisions) for player in record["players"]]}


def _decision(match: rules.Match, position: replay.Position) -> dict:
    """The person's action at ``match``, against the strong policy's choice there."""
    action = position.action
    seat = action["seat"]
    hand = match.hand
    chosen = bots.choose(POLICY, rules.observe(match, seat))
    played = {name: value for name, value in action.items() if name in _ACTION_FIELDS}
    missed = _missed(match, action, position.events) if hand.phase is rules.Phase.DISCARD else None
    return {"step": position.step, "hand": hand.number, "seat": seat, "phase": hand.phase.value, "played": played,
            "strong": chosen.to_json(), "agreed": _agrees(match, played, chosen, position.events), "missed": missed}


_ACTION_FIELDS = ("type", "source", "card", "discard", "melds", "layoffs")


def _agrees(match: rules.Match, played: dict, chosen: rules.TurnAction, events: tuple[rules.Event, ...]) -> bool:
    if played["type"] != chosen.kind.value:
        return False
    if isinstance(chosen, rules.Draw):
        return played["source"] == chosen.source.value
    if isinstance(chosen, rules.Discard):
        return played["card"] == str(chosen.card)
    if isinstance(chosen, rules.Knock):
        return played["discard"] == str(chosen.discard)
    if isinstance(chosen, rules.LayOff):
        hand = match.hand
        least = hand.automatic_layoff(hand.turn, match.rules)[2]
        return _public(events, rules.EventType.LAYOFF)["deadwood"] == least
    return True  # a pass


def _public(events: tuple[rules.Event, ...], kind: rules.EventType) -> dict:
    return next(event.public for event in events if event.type is kind)


def _missed(match: rules.Match, action: dict, events: tuple[rules.Event, ...]) -> str | None:
    """``gin`` or ``knock`` when the person let one pass at this discard, else None."""
    least = match.hand.arrangement(action["seat"]).deadwood  # after the best allowed discard
    gin_open, knock_open = least == 0, least <= match.rules.knock_limit
    if action["type"] == rules.ActionType.KNOCK:
        return GIN if gin_open and _public(events, rules.EventType.KNOCK)["deadwood"] > 0 else None
    return GIN if gin_open else KNOCK if knock_open else None


def _summary(record: dict, player: dict, decisions: list[dict]) -> dict:
    seat = player["seat"]
    mine = [d for d in decisions if d["seat"] == seat]
    agreed = sum(d["agreed"] for d in mine)
    results = [hand["result"] for hand in record["hands"] if hand["result"] is not None]
    defended = [r for r in results if r["defender"] == seat]
    return {
        "seat": seat, "name": player["name"], "bot": player["bot"], "decisions": len(mine), "agreed": agreed,
        "agreement": round(agreed / len(mine), 4) if mine else None,
        "knocks_against": len(defended), "deadwood_caught": sum(r["defender_deadwood"] for r in defended),
        "undercuts_suffered": sum(r["outcome"] == rules.Outcome.UNDERCUT and r["knocker"] == seat for r in results),
        "knocks_missed": sum(d["missed"] == KNOCK for d in mine), "gins_missed": sum(d["missed"] == GIN for d in mine),
    }
