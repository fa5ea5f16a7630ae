"""``ginrummy verify``: is a record what an honest match leaves? (docs/fairness.md, "Verifying")

In order, stopping at the first thing that is not so: the format; the commitment (the SHA-256
of the revealed server seed); every cut and every deal against the decks the seeds give (cards
dealt, upcard, stock order); then every action played again through the engine on those decks:
the engine must accept it and arrive where the record says (each hand's dealer, roles and
upcard, each card drawn, each timeout's deadline, each hand's result, the match's result).
"""
from __future__ import annotations

from dataclasses import dataclass

from service import rules
from service.records import replay
from service.records.record import DEALT, FORMAT, timeout_flags
from service.rules.deals import commitment, cut_label, deal_label, derive_deck


@dataclass(frozen=True)
class Mismatch:
    """The first thing found wrong: where in the record, and what."""

    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


class _Found(Exception):
    def __init__(self, where: str, detail: str) -> None:
        super().__init__(detail)
        self.mismatch = Mismatch(where, detail)


def verify(record: object) -> Mismatch | None:
    """None when ``record`` is honest, else the first mismatch (a malformed record included)."""
    checks = (_format, _commitment, _cuts, _deals, _flags, _play)
    where = "record"
    try:
        for check in checks:
            where = check.__name__.strip("_")
            check(record)
    except _Found as found:
        return found.mismatch
    except replay.ReplayError as refused:
        return Mismatch(refused.where, refused.detail)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as malformed:
        return Mismatch(where, f"malformed record ({type(malformed).__name__}: {str(malformed)[:80]})")
    return None


def _require(condition: bool, where: str, detail: str) -> None:
    if not condition:
        raise _Found(where, detail)


def _same(where: str, recorded: object, derived: object, what: str) -> None:
    """Raise naming the first position where a recorded card list differs from the derived one."""
    if recorded == derived:
        return
    if isinstance(recorded, list) and isinstance(derived, list):
        for n, (mine, theirs) in enumerate(zip(recorded, derived)):
            if mine != theirs:
                raise _Found(f"{where}[{n}]", f"the record says {mine}, the seeds give {theirs} ({what})")
        raise _Found(where, f"the record has {len(recorded)} cards, the seeds give {len(derived)} ({what})")
    raise _Found(where, f"the record says {recorded!r}, the seeds give {derived!r} ({what})")


def _format(record: dict) -> None:
    _require(isinstance(record, dict) and record.get("format") == FORMAT, "format", f"not a {FORMAT} record")
    _require(record["fairness"] is not None, "fairness",
             "the match was dealt before fair shuffles: its deals cannot be verified")


def _commitment(record: dict) -> None:
    fairness = record["fairness"]
    seed, client = fairness["server_seed"], fairness["client_seed"]
    _require(isinstance(seed, str) and isinstance(client, str), "fairness", "the seeds must be text")
    _require(commitment(seed) == fairness["commitment"], "fairness.commitment",
             "is not the SHA-256 of the server seed")


def _seeds(record: dict) -> tuple[str, str]:
    return record["fairness"]["server_seed"], record["fairness"]["client_seed"]


def _cuts(record: dict) -> None:
    seats = len(record["players"])
    cuts = record["cuts"]
    _require(bool(cuts), "cuts", "the record has no cut")
    for n, cut in enumerate(cuts, start=1):
        derived = [str(card) for card in derive_deck(*_seeds(record), cut_label(n))[:seats]]
        _same(f"cuts[{n - 1}].cards", cut["cards"], derived, f"cut {n}")
        decided = len({card[0] for card in derived}) == seats
        _require(cut["decided"] == decided and decided == (n == len(cuts)), f"cuts[{n - 1}].decided",
                 "the cuts go on exactly until one has no equal ranks")


def _deals(record: dict) -> None:
    hands = record["hands"]
    _require(bool(hands), "hands", "the record has no hand")
    for h, hand in enumerate(hands):
        where = f"hands[{h}]"
        _require(hand["number"] == h + 1, f"{where}.number", f"hand {h + 1} comes here")
        deck = [str(card) for card in derive_deck(*_seeds(record), deal_label(hand["number"]))]
        _same(f"{where}.dealt.{hand['non_dealer']}", hand["dealt"][str(hand["non_dealer"])], deck[0:DEALT:2],
              f"the non-dealer's cards of hand {h + 1}")
        _same(f"{where}.dealt.{hand['dealer']}", hand["dealt"][str(hand["dealer"])], deck[1:DEALT:2],
              f"the dealer's cards of hand {h + 1}")
        _same(f"{where}.upcard", hand["upcard"], deck[DEALT], f"the upcard of hand {h + 1}")
        _same(f"{where}.stock", hand["stock"], deck[DEALT + 1:], f"the stock of hand {h + 1}")


def _flags(record: dict) -> None:
    """Who chose each action: a bot seat's moves and the moves the service played after a missed
    deadline are marked ``bot``; those and the timeout before them are marked ``timeout``."""
    bots = {player["seat"] for player in record["players"] if player["bot"]}
    for h, hand in enumerate(record["hands"]):
        for a, (action, timeout) in enumerate(zip(hand["actions"], timeout_flags(hand["actions"]))):
            where = f"hands[{h}].actions[{a}]"
            _require(action["timeout"] == timeout, f"{where}.timeout",
                     f"{'part' if timeout else 'not part'} of a turn played after a missed deadline")
            chosen_by_bot = action["seat"] in bots or (timeout and action["type"] != "timeout")
            _require(action["bot"] == chosen_by_bot, f"{where}.bot",
                     f"{'a computer' if chosen_by_bot else 'a person'} chose this {action['type']}")


def _play(record: dict) -> None:
    """Every action through the engine on the decks the seeds give."""
    hands = record["hands"]
    steps = [(h, action) for h, hand in enumerate(hands) for action in hand["actions"]]
    _require(record["steps"] == len(steps), "steps", f"the record holds {len(steps)} actions")
    for h, hand in enumerate(hands):
        _require(bool(hand["actions"]), f"hands[{h}].actions", "every hand ends with an action")
    positions = replay.positions(record, derived=True)
    match = next(positions).match
    _check_deal(match, hands[0], "hands[0]")
    for n, ((h, action), position) in enumerate(zip(steps, positions), start=1):
        where = position.where
        _require(action["step"] == n, f"{where}.step", f"this is step {n}")
        _check_events(position, where)
        match = position.match
        if n == len(steps) or steps[n][0] != h:
            _check_hand_end(match, position, hands, h)
    _require(match.result is not None and match.result.as_dict() == record["result"], "result",
             f"the engine ends the match with {None if match.result is None else match.result.as_dict()}")


def _check_events(position: replay.Position, where: str) -> None:
    action = position.action
    for event in position.events:
        if event.type is rules.EventType.DRAW and event.seat == action["seat"]:
            drawn = event.public["card"] or event.secret["card"]
            _require(action["card"] == drawn, f"{where}.card", f"the engine draws {drawn} here")
        elif event.type is rules.EventType.TIMEOUT:
            _require(action["deadline"] == event.public["deadline"], f"{where}.deadline",
                     f"the deadline that passed is {event.public['deadline']}")


def _check_hand_end(match: rules.Match, position: replay.Position, hands: list[dict], h: int) -> None:
    """After the last action of hand ``h``: its result, and the next hand's deal."""
    where = f"hands[{h}]"
    scored = [e.public for e in position.events if e.type is rules.EventType.HAND_SCORED]
    recorded = hands[h]["result"]
    _require([recorded] == scored if recorded is not None else not scored, f"{where}.result",
             f"the engine scores the hand {scored[0] if scored else 'not at all'}")
    if h + 1 < len(hands):
        _require(match.hand is not None and match.hand.number == hands[h + 1]["number"], f"hands[{h + 1}]",
                 "the engine deals no such hand here")
        _check_deal(match, hands[h + 1], f"hands[{h + 1}]")
    else:
        _require(match.is_finished, where, "the match goes on after the record's last action")


def _check_deal(match: rules.Match, hand: dict, where: str) -> None:
    """A hand as the engine dealt it against the record: dealer, non-dealer and roles."""
    dealt = match.hand
    roles = [match.role(seat).value for seat in range(match.seat_count)]
    for name, derived in (("dealer", dealt.dealer), ("non_dealer", dealt.non_dealer), ("roles", roles)):
        _require(hand[name] == derived, f"{where}.{name}", f"the cut and the results so far give {derived!r}")
