"""Checks shared by the tests of bots, deadlines, webhooks and integrators' features.

- ``LogReplay``: the stored event log (the truth, hidden cards included) replayed card by
  card with rules written here independently of the engine: every action by the seat the
  previous event named, every card where it can be, every meld a meld, the stock drawn in
  the dealt order; bot moves marked ``bot: true`` and people's moves not (except the moves the
  service plays for a person after a timeout).
- ``HiddenCards``: which cards a viewer may not know at this moment, from that same log, and
  the scan of any answer for them.
- ``person_move``: a legal move chosen from a view alone, like a client would.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field

from service import rules
from service.store.base import GameStore

CARD = re.compile(r"^[A2-9TJQK][cdhs]$")
RANKS = "A23456789TJQK"
ACTIONS = ("draw", "pass", "discard", "knock", "layoff")
# Events about a finished hand reveal it (like ``last_hand``); they are not scanned.
AFTER_THE_HAND = {"hand_scored", "match_finished"}
HAND_SIZE = 10


def cards_in(node: object) -> set[str]:
    """Every string in ``node`` (any JSON) that is a card."""
    if isinstance(node, str):
        return {node} if CARD.match(node) else set()
    if isinstance(node, dict):
        return set().union(*(cards_in(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(cards_in(v) for v in node)) if node else set()
    return set()


def current_part(view: dict) -> dict:
    """A view without what shows finished hands (``last_hand``, ``result``)."""
    return {key: value for key, value in view.items() if key not in ("last_hand", "result")}


def rank(card: str) -> int:
    return RANKS.index(card[0])


def value(card: str) -> int:
    return min(rank(card) + 1, 10)


def is_meld(cards: list[str]) -> bool:
    """A set (3-4 of a rank) or a run (3+ consecutive cards of a suit, ace low)."""
    if len(cards) < 3 or len(set(cards)) != len(cards):
        return False
    if len({c[0] for c in cards}) == 1:
        return len(cards) <= 4
    if len({c[1] for c in cards}) != 1:
        return False
    ranks = sorted(rank(c) for c in cards)
    return ranks == list(range(ranks[0], ranks[0] + len(ranks)))


def extends(meld: list[str], card: str) -> bool:
    return card not in meld and is_meld([*meld, card])


def stored_events(store: GameStore, game_id: str) -> list[rules.Event]:
    """The game's events as stored: nothing redacted."""
    return [rules.decode_event(text) for text in store.events(game_id, 0)]


def stored_record(store: GameStore, game_id: str) -> dict:
    return json.loads(store.load(game_id).state)


def stored_match(store: GameStore, game_id: str) -> rules.Match:
    return rules.decode(stored_record(store, game_id)["m"])


@dataclass
class HandState:
    number: int
    holdings: dict[int, set[str]] = field(default_factory=dict)
    stock: list[str] = field(default_factory=list)  # next card to draw first
    pile: list[str] = field(default_factory=list)  # top card last
    shown: set[str] = field(default_factory=set)  # every card the table has shown this hand
    taken: str | None = None  # taken from the pile this turn: may not be discarded
    knock: dict | None = None
    knocker: int | None = None
    over: bool = False


class LogReplay:
    """Replays a game's stored events; ``check(events)`` raises AssertionError at the first
    event that breaks a rule. ``bots`` gives each seat's level (None: a person)."""

    def __init__(self, bots: list[str | None], knock_limit: int = 10):
        self.bots = bots
        self.knock_limit = knock_limit
        self.hand: HandState | None = None
        self.seq = 0
        self.turn: int | None = None
        self.timed_out: int | None = None  # a person whose turn the service is playing
        self.finished = False
        self.counts: dict[str, int] = {}

    def check(self, events: list[rules.Event]) -> LogReplay:
        for event in events:
            self.step(event)
        return self

    def step(self, event: rules.Event) -> None:
        kind = event.type.value
        where = f"event {event.seq} ({kind}, seat {event.seat})"
        assert event.seq == self.seq + 1, f"{where}: numbered after {self.seq}"
        assert not self.finished or kind == "rematch", f"{where}: after the end of the match"
        self.seq = event.seq
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind in ACTIONS:
            assert event.seat == self.turn, f"{where}: the seat to act was {self.turn}"
            if self.timed_out == event.seat:
                assert event.bot, f"{where}: a move played after a timeout is the service's"
            else:
                assert event.bot == (self.bots[event.seat] is not None), f"{where}: bot flag {event.bot}"
            getattr(self, f"_{kind}")(event, where)
        elif kind == "advice":
            assert event.bot == (self.bots[event.seat] is not None), f"{where}: bot flag {event.bot}"
        elif kind == "timeout":
            assert event.seat == self.turn and self.bots[event.seat] is None, f"{where}: not a person to act"
            self.timed_out = event.seat
        else:
            assert not event.bot, f"{where}: marked as a bot's move"
            handler = getattr(self, f"_{kind}", None)
            if handler is not None:
                handler(event, where)
        if event.turn != self.turn:
            self.timed_out = None
        self.turn = event.turn

    # --- the deal ------------------------------------------------------------------------
    def _deal(self, event: rules.Event, where: str) -> None:
        deck = event.secret["deck"]
        assert len(set(deck)) == 52, f"{where}: not a deck"
        self.hand = HandState(event.public["number"], stock=deck[2 * HAND_SIZE + 1:], pile=[event.public["upcard"]])
        assert deck[2 * HAND_SIZE] == event.public["upcard"], f"{where}: the upcard is not the 21st card"
        assert len(self.hand.stock) == event.public["stock_count"], where
        self.hand.shown.add(event.public["upcard"])
        self.dealt_from = deck[: 2 * HAND_SIZE]

    def _dealt(self, event: rules.Event, where: str) -> None:
        cards = event.secret["cards"]
        assert len(cards) == HAND_SIZE and set(cards) <= set(self.dealt_from), f"{where}: not dealt from the deck"
        assert not any(set(cards) & held for held in self.hand.holdings.values()), f"{where}: a card dealt twice"
        self.hand.holdings[event.seat] = set(cards)

    # --- a turn --------------------------------------------------------------------------
    def _pass(self, event: rules.Event, where: str) -> None:
        assert event.public["card"] == self.hand.pile[-1], f"{where}: passed on a card that is not the upcard"

    def _draw(self, event: rules.Event, where: str) -> None:
        hand = self.hand
        card = event.secret.get("card") or event.public["card"]
        if event.public["source"] == "discard":
            assert card == hand.pile[-1] == event.public["card"], f"{where}: not the top of the pile"
            hand.pile.pop()
            hand.taken = card
        else:
            assert event.public["card"] is None, f"{where}: a stock draw shown to all"
            assert hand.stock and card == hand.stock[0], f"{where}: not the next card of the stock"
            hand.stock.pop(0)
            hand.taken = None
        hand.holdings[event.seat].add(card)
        assert len(hand.holdings[event.seat]) == HAND_SIZE + 1, f"{where}: drew with {HAND_SIZE + 1} cards"

    def _shed(self, seat: int, card: str, where: str) -> None:
        hand = self.hand
        assert card in hand.holdings[seat], f"{where}: {card} not held"
        assert card != hand.taken, f"{where}: discarded the card just taken"
        hand.holdings[seat].remove(card)
        hand.pile.append(card)
        hand.shown.add(card)
        hand.taken = None

    def _discard(self, event: rules.Event, where: str) -> None:
        self._shed(event.seat, event.public["card"], where)

    def _knock(self, event: rules.Event, where: str) -> None:
        public = event.public
        self._shed(event.seat, public["discard"], where)
        melds, loose = public["melds"], public["deadwood_cards"]
        laid = [c for meld in melds for c in meld] + loose
        assert sorted(laid) == sorted(self.hand.holdings[event.seat]), f"{where}: the knock is not the hand"
        assert all(is_meld(m) for m in melds), f"{where}: a knocker's meld is not a meld"
        assert public["deadwood"] == sum(value(c) for c in loose) <= self.knock_limit, f"{where}: deadwood"
        assert public["gin"] == (public["deadwood"] == 0), where
        self.hand.knock = {"melds": [list(m) for m in melds]}
        self.hand.knocker = event.seat
        self.hand.shown |= set(laid)

    def _layoff(self, event: rules.Event, where: str) -> None:
        public = event.public
        assert self.hand.knock is not None and event.seat != self.hand.knocker, f"{where}: no knock to answer"
        melds = [list(m) for m in self.hand.knock["melds"]]
        for layoff in public["layoffs"]:
            assert extends(melds[layoff["meld"]], layoff["card"]), f"{where}: {layoff} does not extend its meld"
            melds[layoff["meld"]].append(layoff["card"])
        laid = [c for meld in public["melds"] for c in meld] + [x["card"] for x in public["layoffs"]]
        assert sorted(laid + public["deadwood_cards"]) == sorted(self.hand.holdings[event.seat]), where
        assert all(is_meld(m) for m in public["melds"]), f"{where}: a defender's meld is not a meld"
        assert public["deadwood"] == sum(value(c) for c in public["deadwood_cards"]), where
        self.hand.shown |= set(laid) | set(public["deadwood_cards"])

    # --- the end of a hand, of a match ----------------------------------------------------
    def _hand_scored(self, event: rules.Event, where: str) -> None:
        hands = {int(seat): set(cards) for seat, cards in event.public["hands"].items()}
        assert hands == self.hand.holdings, f"{where}: the hands shown are not the hands held"
        self.hand.over = True

    def _match_finished(self, event: rules.Event, where: str) -> None:
        self.finished = True
        self.turn = None


class HiddenCards:
    """What each viewer may not know now, from the stored truth: the stock and every hand
    but its own (the box sitter sees the captain's), minus every card the table showed this
    hand (the upcard, the pile, a knock laid down)."""

    def __init__(self, match: rules.Match, replay: LogReplay):
        self.match = match
        self.replay = replay

    def for_viewer(self, viewer: int | None) -> set[str]:
        match, hand = self.match, self.replay.hand
        if match.hand is None or hand is None or hand.over:
            return set()
        hidden = set(hand.stock)
        for seat, cards in hand.holdings.items():
            if seat == viewer or (viewer is not None and viewer == match.sitter and seat == match.captain):
                continue
            hidden |= cards
        return hidden - hand.shown

    def assert_view_clean(self, view: dict, viewer: int | None, what: str) -> None:
        leaked = cards_in(current_part(view)) & self.for_viewer(viewer)
        assert not leaked, f"{what}: seat {viewer} is shown {sorted(leaked)}"

    def assert_events_clean(self, shown: list[dict], truth: dict[int, rules.Event], viewer: int | None,
                            what: str) -> None:
        """Events as ``viewer`` got them: none of the current hand shows a hidden card, and no
        event shows a secret field to a viewer outside its ``seen_by``."""
        hidden = self.for_viewer(viewer)
        current = None if self.replay.hand is None else self.replay.hand.number
        for event in shown:
            stored = truth[event["seq"]]
            if viewer not in stored.seen_by:
                for name in stored.secret:
                    if name in stored.public:
                        assert event.get(name) == stored.public[name], f"{what}: event {event['seq']} shows {name}"
                    else:
                        assert name not in event, f"{what}: event {event['seq']} shows its secret {name}"
            if event["hand"] == current and event["type"] not in AFTER_THE_HAND:
                leaked = cards_in(event) & hidden
                assert not leaked, f"{what}: event {event['seq']} shows seat {viewer} {sorted(leaked)}"


def person_move(view: dict, rng: random.Random) -> tuple[str, dict | None] | None:
    """A legal move for the viewer, from the view alone (None: not the viewer's turn):
    knock when the view allows it, else discard its best discard; take or pass the upcard
    and draw from either pile at random; let the engine lay down against a knock."""
    you = view.get("you") or {}
    legal = you.get("legal_actions") or []
    if not legal:
        return None
    if "layoff" in legal:
        return "layoff", None
    if "knock" in legal and you["can_knock"]:
        return "knock", {"discard": you["best_discard"]}
    if "discard" in legal:
        return "discard", {"card": you["best_discard"]}
    if "pass" in legal and rng.random() < 0.5:
        return "pass", None
    return "draw", {"source": rng.choice(you["draw_sources"])}
