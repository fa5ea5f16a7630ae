"""What happens in a match without a person deciding it, inline in the request that caused it.

After every change a match is ``advance``d: a person's turn whose deadline passed is played
for them by the standard policy (after a ``timeout`` event), bots play their turns, and a bot
sitter advises a human captain, until a person must act or the match is over. All of it lands
in the same compare-and-set as the change itself, so a client's answer already shows it.
"""
from __future__ import annotations

from service import bots, rules

# A hand played by two bots while the person sits out is some dozens of steps; a runaway loop
# is a bug, and failing loudly beats a request that never ends.
MAX_STEPS = 5000


def advance(match: rules.Match, now: float) -> tuple[rules.Match, list[rules.Event]]:
    """``match`` played forward until a person must act (or it is over), and the events of it."""
    events: list[rules.Event] = []
    for _ in range(MAX_STEPS):
        if match.is_finished:
            return match, events
        seat = match.turn
        if rules.is_due(match, now):
            match, timed_out = rules.time_out(match, now)
            match, played = play_turn(match, seat, bots.Level.STANDARD, now)
            events += timed_out + played
        elif match.is_bot(seat):
            match, played = play_turn(match, seat, match.bots[seat], now)
            events += played
        else:
            match, advice = _sitter_advice(match)
            return match, events + advice
    raise RuntimeError(f"a match did not reach a person's turn in {MAX_STEPS} steps")


def play_turn(match: rules.Match, seat: int, level: str, now: float) -> tuple[rules.Match, list[rules.Event]]:
    """``seat``'s whole turn chosen by the policy ``level`` (a draw and a discard are one turn)."""
    events: list[rules.Event] = []
    hand_number = match.hand.number
    while not match.is_finished and match.turn == seat and match.hand.number == hand_number:
        action = bots.choose(level, rules.observe(match, seat))
        match, more = rules.apply(match, seat, action, now=now, bot=True)
        events += more
    return match, events


def _sitter_advice(match: rules.Match) -> tuple[rules.Match, list[rules.Event]]:
    """A bot sitter's suggestion to the human captain who must act now (box only)."""
    sitter, captain = match.sitter, match.captain
    if sitter is None or not match.is_bot(sitter) or match.turn != captain or match.is_bot(captain):
        return match, []
    if len(match.advice) >= rules.ADVICE_PER_HAND:
        return match, []
    hint = bots.hint(rules.observe(match, captain))
    return rules.apply(match, sitter, rules.Advise(hint.reason, hint.action), bot=True)
