"""A match of hands: seats and roles, who deals, cumulative scores, the end and its bonuses
(docs/rules.md, "Seats and the deal", "The match").

``apply(match, seat, action)`` is the one way a player changes a match; ``time_out``,
``abort`` and the bots go through the same kind of step. Each returns a new match with its
version one higher and the numbered events of the change, or raises and changes nothing.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from enum import Enum

from .actions import Advise, Resign, TurnAction
from .cards import Card, cards_of, new_deck, notation
from .deals import cut_label, deal_label, derive_deck
from .errors import Forbidden, IllegalMove, InvalidInput
from .events import Event, EventType
from .evolve import evolve
from .hand import Draft, Hand, HandResult, deal
from .options import BOX, CLASSIC, SEATS, Rules

# The box sitter's advice is for the captain's current hand; more than this many messages in one
# hand is not advice any more, and each one is kept with the match.
ADVICE_PER_HAND = 30


class _Current:
    """The default of ``Match._stamp``'s ``turn``: the match's own seat to act."""


CURRENT = _Current()


class Status(str, Enum):
    ACTIVE = "active"
    FINISHED = "finished"
    ABORTED = "aborted"


class Role(str, Enum):
    DEALER = "dealer"
    PLAYER = "player"
    BOX = "box"
    CAPTAIN = "captain"
    SITTER = "sitter"


@dataclass(frozen=True)
class ResultLine:
    seat: int
    hand_points: int
    game_bonus: int = 0
    line_bonus: int = 0
    shutout_bonus: int = 0

    @property
    def total(self) -> int:
        return self.hand_points + self.game_bonus + self.line_bonus + self.shutout_bonus

    def as_dict(self) -> dict:
        return {"seat": self.seat, "hand_points": self.hand_points, "game_bonus": self.game_bonus,
                "line_bonus": self.line_bonus, "shutout_bonus": self.shutout_bonus, "total": self.total}


@dataclass(frozen=True)
class MatchResult:
    """How a match ended: played out, resigned (``forfeit``) or aborted (no winner)."""

    status: Status
    winner: int | None
    players: tuple[ResultLine, ...]
    forfeit: int | None = None

    def as_dict(self) -> dict:
        return {"status": self.status.value, "winner": self.winner, "forfeit": self.forfeit,
                "players": [line.as_dict() for line in self.players]}

    @classmethod
    def from_dict(cls, data: dict) -> MatchResult:
        lines = tuple(ResultLine(p["seat"], p["hand_points"], p["game_bonus"], p["line_bonus"], p["shutout_bonus"])
                      for p in data["players"])
        return cls(Status(data.get("status", Status.FINISHED.value)), data["winner"], lines, data.get("forfeit"))


@dataclass(frozen=True)
class Match:
    variant: str
    rules: Rules
    names: tuple[str, ...]
    seed: str | None  # what the decks are drawn from; None: the OS's unpredictable source
    scores: tuple[int, ...]
    hands_won: tuple[int, ...]
    dealer: int  # classic: this hand's dealer; box: the box player, who always deals
    captain: int | None = None  # box only: the box player's opponent
    sitter: int | None = None  # box only: sees the captain's hand and may advise
    deals: int = 0  # deals so far, redeals after dead hands included: the number of the current hand
    hand: Hand | None = None
    last_hand: HandResult | None = None
    result: MatchResult | None = None
    advice: tuple[dict, ...] = ()
    version: int = 1
    event_count: int = 0
    bots: tuple[str | None, ...] = ()  # per seat: the bot's level, None for a person
    timeouts: tuple[int, ...] = ()  # per seat: moves the service played after a missed deadline
    # Fair shuffles (deals.py): every deck follows from these. None: a match dealt before them,
    # whose decks come from ``seed`` (or, without one, the OS's unpredictable source).
    server_seed: str | None = None
    client_seed: str = ""
    # The decks of a match being replayed from its record, by label; never stored (a replay is
    # rebuilt from its record every time).
    replayed_decks: Mapping[str, Sequence[Card]] | None = field(default=None, compare=False, repr=False)

    @property
    def seat_count(self) -> int:
        return len(self.names)

    @property
    def is_finished(self) -> bool:
        return self.result is not None

    @property
    def status(self) -> Status:
        return Status.ACTIVE if self.result is None else self.result.status

    @property
    def opponent_of_dealer(self) -> int:
        return self.captain if self.variant == BOX else 1 - self.dealer

    @property
    def turn(self) -> int | None:
        """The seat that must act now, or None once the match is over."""
        return None if self.hand is None else self.hand.turn

    def is_bot(self, seat: int) -> bool:
        return self.bots[seat] is not None

    def deck(self, label: str) -> list[Card]:
        """The shuffled deck of ``label`` (``deals.cut_label``, ``deals.deal_label``).

        Raises KeyError when a replayed match's record holds no deck of that label."""
        if self.replayed_decks is not None:
            return list(self.replayed_decks[label])
        if self.server_seed is not None:
            return derive_deck(self.server_seed, self.client_seed, label)
        return new_deck(self.seed, label)

    def role(self, seat: int) -> Role:
        if self.variant == CLASSIC:
            return Role.DEALER if seat == self.dealer else Role.PLAYER
        return Role.BOX if seat == self.dealer else Role.CAPTAIN if seat == self.captain else Role.SITTER

    def watchers(self, seat: int) -> tuple[int, ...]:
        """Who may see ``seat``'s secrets: the seat itself and, in a box match, its teammate
        (the sitter sees the captain's cards, the captain the sitter's advice)."""
        team = (self.captain, self.sitter)
        if self.sitter is not None and seat in team:
            return (seat, team[1 - team.index(seat)])
        return (seat,)

    def _stamp(self, drafts: list[Draft], bot: bool = False, turn: int | None | _Current = CURRENT) -> tuple[Match, list[Event]]:
        """Number ``drafts`` as events. Each says whose turn it is once this step is complete
        (``turn``, by default the seat to act in this match), so ``_stamp`` is called on the
        match as it stands after the step."""
        turn = self.turn if isinstance(turn, _Current) else turn
        events = []
        for n, (kind, seat, public, secret) in enumerate(drafts, start=self.event_count + 1):
            seen_by = self.watchers(seat) if secret and seat is not None else ()
            events.append(Event(n, EventType(kind), seat, self.deals or None, public, secret, seen_by, turn, bot))
        return evolve(self, event_count=self.event_count + len(drafts)), events


def new_match(variant: str, names: list[str], rules: Rules, seed: str | int | None = None,
              bots: list[str | None] | None = None, now: float | None = None, *, server_seed: str | None = None,
              client_seed: str = "", replayed_decks: Mapping[str, Sequence[Card]] | None = None
              ) -> tuple[Match, list[Event]]:
    """Cut for the deal and deal the first hand.

    ``server_seed`` and ``client_seed`` fix every deck of the match (deals.py); without a server
    seed, ``seed`` makes every shuffle reproducible, and without either they are unpredictable.
    ``seed`` also fixes the bots' random choices. ``replayed_decks`` (by label) replays a
    recorded match. ``bots`` gives each seat's bot level (None for a person); ``now`` (epoch
    seconds) starts the first turn's clock when the rules have ``turn_seconds``. Raises
    InvalidInput for a wrong player count, KeyError for a replayed deck that is missing.
    """
    seats = SEATS[variant]
    if len(names) != seats:
        raise InvalidInput(f"a {variant} match has {seats} players, not {len(names)}", field="players",
                           params={"seats": seats})
    bots = tuple(bots) if bots is not None else (None,) * seats
    seed = None if seed is None else str(seed)
    unseated = Match(variant, rules, tuple(names), seed, (0,) * seats, (0,) * seats, dealer=0, bots=bots,
                     timeouts=(0,) * seats, server_seed=server_seed, client_seed=client_seed,
                     replayed_decks=replayed_decks)
    order, cut_drafts = _cut(unseated)
    match = evolve(unseated, dealer=order[0], captain=order[1] if variant == BOX else None,
                    sitter=order[2] if variant == BOX else None)
    dealt, deal_drafts = _deal_next(match, now)
    # The cut comes before any hand (no hand number) and announces the first turn.
    match, events = match._stamp(cut_drafts, turn=dealt.turn)
    dealt, more = evolve(dealt, event_count=match.event_count)._stamp(deal_drafts)
    return dealt, events + more


def _cut(match: Match) -> tuple[list[int], list[Draft]]:
    """Seats from the highest cut card down (seat s cuts the deck's card s); equal ranks cut
    again (every cut is recorded)."""
    seats = match.seat_count
    drafts: list[Draft] = []
    attempt = 0
    while True:
        attempt += 1
        cut = match.deck(cut_label(attempt))[:seats]
        ranks = [c.rank for c in cut]
        decided = len(set(ranks)) == seats
        drafts.append(("cut", None, {"cards": notation(cut), "decided": decided}, {}))
        if decided:
            return sorted(range(seats), key=lambda s: -ranks[s]), drafts


def _deal_next(match: Match, now: float | None) -> tuple[Match, list[Draft]]:
    """The match with the next hand dealt, and the drafts of the deal (not yet numbered)."""
    number = match.deals + 1
    deck = match.deck(deal_label(number))
    hand = deal(number, match.dealer, match.opponent_of_dealer, deck)
    match = evolve(match, deals=number, hand=_clocked(hand, match.rules, now), advice=())
    roles = [match.role(s).value for s in range(match.seat_count)]
    drafts: list[Draft] = [("deal", None, {"number": number, "dealer": match.dealer, "roles": roles,
                                           "upcard": str(hand.pile[-1]), "stock_count": len(hand.stock)},
                            {"deck": notation(deck)})]
    # The deck is stored for audit and replay but shown to nobody: a draft without a seat.
    drafts += [("dealt", seat, {}, {"cards": notation(cards_of(hand.holding(seat)))}) for seat in hand.seats]
    return match, drafts


def _clocked(hand: Hand, rules: Rules, now: float | None) -> Hand:
    """``hand`` with the deadline of the seat to act started at ``now`` (when turns are timed)."""
    if rules.turn_seconds is None or now is None:
        return hand
    return evolve(hand, deadline=now + rules.turn_seconds)


def apply(match: Match, seat: int, action, *, now: float | None = None, bot: bool = False) -> tuple[Match, list[Event]]:
    """Apply one seat's action (``bot``: a computer chose it). ``now`` (epoch seconds) starts
    the next turn's clock when the rules time turns.

    Raises IllegalMove (game_finished, not_your_turn, ...), Forbidden (the sitter playing,
    anyone else advising) or InvalidInput; changes nothing then.
    """
    if match.is_finished:
        raise IllegalMove("the match is over", code="game_finished", params={"status": match.status.value})
    if not (isinstance(seat, int) and 0 <= seat < match.seat_count):
        raise Forbidden(f"seat {seat!r} is not in this match", params={"seat": seat})
    if isinstance(action, Resign):
        return resign(match, seat)
    if isinstance(action, Advise):
        return _advise(match, seat, action, bot)
    check_turn(match, seat, action)
    return _play(match, seat, action, now, bot)


def check_turn(match: Match, seat: int, action: TurnAction) -> None:
    """Raise what ``apply`` would raise before looking at the action's cards: the match is over,
    the seat may not play (the sitter), it is not the seat's turn, or the phase does not allow
    this kind of action."""
    if match.is_finished:
        raise IllegalMove("the match is over", code="game_finished", params={"status": match.status.value})
    if seat == match.sitter:
        raise Forbidden("the sitter may see the captain's hand and advise, but only the captain plays",
                        params={"role": Role.SITTER.value})
    hand = match.hand
    if seat != hand.turn:
        raise IllegalMove(f"it is seat {hand.turn}'s turn", code="not_your_turn", params={"turn": hand.turn})
    hand.check_phase(action)


def _play(match: Match, seat: int, action: TurnAction, now: float | None, bot: bool) -> tuple[Match, list[Event]]:
    next_hand, drafts, outcome = match.hand.apply(seat, action, match.rules)
    if next_hand is not None and next_hand.turn != seat:
        next_hand = _clocked(next_hand, match.rules, now)
    match, events = evolve(match, hand=next_hand, version=match.version + 1)._stamp(drafts, bot)
    if outcome is not None:
        match, more = _finish_hand(match, outcome, now)
        events = _with_turn(events, match.turn) + more
    return match, events


def _with_turn(events: list[Event], turn: int | None) -> list[Event]:
    """Events of a step that ended a hand: the turn they announce is the next hand's."""
    return [evolve(event, turn=turn) for event in events]


def is_due(match: Match, now: float) -> bool:
    """Whether the seat to act, a person, has let its turn's deadline pass."""
    hand = match.hand
    return (hand is not None and hand.deadline is not None and hand.deadline <= now
            and not match.is_bot(hand.turn))


def time_out(match: Match, now: float) -> tuple[Match, list[Event]]:
    """Record that the seat to act missed its deadline (its move is then played for it).

    Raises IllegalMove(wrong_phase) when nothing is due."""
    if match.is_finished or not is_due(match, now):
        raise IllegalMove("no deadline has passed", code="wrong_phase")
    seat, deadline = match.hand.turn, match.hand.deadline
    timeouts = list(match.timeouts)
    timeouts[seat] += 1
    match = evolve(match, timeouts=tuple(timeouts), version=match.version + 1)
    return match._stamp([("timeout", seat, {"deadline": iso_time(deadline), "timeouts": timeouts[seat]}, {})])


def iso_time(epoch_seconds: float) -> str:
    """An epoch time as ISO 8601 UTC, to the second (``2026-12-01T10:00:00Z``)."""
    return _iso_second(int(epoch_seconds))


# Every save writes its game's tombstone expiry, and the saves of one second share the text
# (formatting it: 1.7 us; a cache hit: 0.1 us).
@lru_cache(maxsize=256)
def _iso_second(epoch_second: int) -> str:
    return datetime.fromtimestamp(epoch_second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _advise(match: Match, seat: int, action: Advise, bot: bool) -> tuple[Match, list[Event]]:
    if match.variant != BOX or seat != match.sitter:
        raise Forbidden("only the sitter of a box match may advise", params={"role": match.role(seat).value})
    if len(match.advice) >= ADVICE_PER_HAND:
        raise IllegalMove(f"at most {ADVICE_PER_HAND} pieces of advice per hand", code="advice_limit_reached",
                          params={"limit": ADVICE_PER_HAND})
    suggested = None if action.action is None else action.action.to_json()
    advice = {"seat": seat, "message": action.message, "action": suggested}
    match = evolve(match, advice=match.advice + (advice,), version=match.version + 1)
    return match._stamp([("advice", seat, {}, {"message": action.message, "action": suggested})], bot)


def resign(match: Match, seat: int) -> tuple[Match, list[Event]]:
    """``seat`` gives up: the match ends at once, totals as they stand and no bonuses; the winner
    is the other player (classic) or the remaining player with the highest total (box; ties go to
    the one who won more hands, then the lower seat)."""
    others = [s for s in range(match.seat_count) if s != seat]
    winner = max(others, key=lambda s: (match.scores[s], match.hands_won[s], -s))
    result = MatchResult(Status.FINISHED, winner, _standing(match), forfeit=seat)
    return _end(match, result, [("resign", seat, {}, {})])


def note_rematch(match: Match, game_id: str) -> tuple[Match, list[Event]]:
    """Record in a finished match that its rematch is ``game_id``."""
    match = evolve(match, version=match.version + 1)
    return match._stamp([("rematch", None, {"game_id": game_id}, {})])


def abort(match: Match) -> tuple[Match, list[Event]]:
    """The match ends with no winner (the integrator that created it called it off).

    Raises IllegalMove(game_finished) when it is already over."""
    if match.is_finished:
        raise IllegalMove("the match is over", code="game_finished", params={"status": match.status.value})
    return _end(match, MatchResult(Status.ABORTED, None, _standing(match)), [("abort", None, {}, {})])


def _standing(match: Match) -> tuple[ResultLine, ...]:
    return tuple(ResultLine(seat, match.scores[seat]) for seat in range(match.seat_count))


def _end(match: Match, result: MatchResult, drafts: list[Draft]) -> tuple[Match, list[Event]]:
    match = evolve(match, result=result, hand=None, advice=(), version=match.version + 1)
    return match._stamp(drafts + [("match_finished", None, result.as_dict(), {})])


def _finish_hand(match: Match, outcome: HandResult, now: float | None) -> tuple[Match, list[Event]]:
    winner, points = outcome.winner, outcome.points
    scores, won = list(match.scores), list(match.hands_won)
    if winner is not None:
        scores[winner] += points
        won[winner] += 1
    match = evolve(match, scores=tuple(scores), hands_won=tuple(won), last_hand=outcome, hand=None, advice=())
    scored: Draft = ("hand_scored", None, outcome.as_dict(), {})
    if winner is not None and scores[winner] >= match.rules.target_score:
        result = _final_result(match, winner)
        return evolve(match, result=result)._stamp([scored, ("match_finished", None, result.as_dict(), {})])
    dealt, deal_drafts = _deal_next(_rotate(match, winner), now)
    # The score belongs to the hand that ended, and announces the new hand's first turn.
    match, events = match._stamp([scored], turn=dealt.turn)
    dealt, more = evolve(dealt, event_count=match.event_count)._stamp(deal_drafts)
    return dealt, events + more


def _rotate(match: Match, winner: int | None) -> Match:
    """Who deals next: classic, the winner (dead hand: the same dealer); box, as the rules say."""
    if winner is None:
        return match
    if match.variant == CLASSIC:
        return evolve(match, dealer=winner)
    if winner == match.dealer:
        return evolve(match, captain=match.sitter, sitter=match.captain)
    return evolve(match, dealer=match.captain, captain=match.sitter, sitter=match.dealer)


def _final_result(match: Match, winner: int) -> MatchResult:
    rules = match.rules
    shutout = all(won == 0 for seat, won in enumerate(match.hands_won) if seat != winner)
    lines = tuple(ResultLine(seat, match.scores[seat],
                             game_bonus=rules.game_bonus if seat == winner else 0,
                             line_bonus=rules.line_bonus * match.hands_won[seat],
                             shutout_bonus=rules.shutout_bonus if seat == winner and shutout else 0)
                  for seat in range(match.seat_count))
    return MatchResult(Status.FINISHED, winner, lines)
