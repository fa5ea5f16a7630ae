"""The engine's vocabulary, checked in every state that random playouts reach: the legal
actions of a phase are exactly those ``apply`` accepts, each action round-trips through its
JSON form, anything else is refused with the code that says why, and every event is in the
registry, says whose turn comes next and survives storage."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from service.rules import (CARDS, EVENT_TYPES, ActionType, Discard, Draw, GameError, Knock, LayOff, Pass, Phase, apply,
                           decode, decode_event, encode, encode_event, new_match, parse_action, redact_event, rules_for)
from service.rules.cards import cards_of
from service.rules.hand import PHASE_ACTIONS
from service.rules.melds import min_deadwood_mask

from .playout import play_match

MATCHES = 40
SAMPLED_REFUSALS = 6


def candidate_actions(match, rng: random.Random) -> list:
    """Actions of every kind, some legal now, most not."""
    hand = match.hand
    held = cards_of(hand.holding(hand.turn))
    cards = rng.sample(held, min(3, len(held))) + rng.sample(list(CARDS), 3)
    if hand.taken is not None:
        cards.append(hand.taken)
    return [Draw("stock"), Draw("discard"), Pass(), LayOff(), *(Discard(c) for c in cards), *(Knock(c) for c in cards)]


def expected_refusal(match, action) -> str:
    """The code with which the rules refuse ``action`` by the seat to act."""
    hand = match.hand
    if action.kind not in PHASE_ACTIONS[hand.phase]:
        return "wrong_phase"
    if isinstance(action, Draw):
        return "wrong_phase"  # a source the phase does not offer
    card = action.card if isinstance(action, Discard) else action.discard
    holding = hand.holding(hand.turn)
    if not holding & card.bit:
        return "card_not_in_hand"
    if card == hand.taken:
        return "cannot_discard_drawn_card"
    assert isinstance(action, Knock) and min_deadwood_mask(holding ^ card.bit)[0] > match.rules.knock_limit
    return "deadwood_too_high"


def check_vocabulary(match, rng: random.Random) -> int:
    """In ``match``'s current state: every legal action is accepted and round-trips; sampled
    others are refused with the right code. Returns how many refusals were checked."""
    if match.is_finished:
        return 0
    hand, rules, seat = match.hand, match.rules, match.hand.turn
    legal = hand.legal_actions(rules)
    assert {action.kind for action in legal} == set(hand.legal_types(rules))
    before = encode(match)
    for action in legal:
        assert parse_action(action.kind, action.to_json()) == action
        apply(match, seat, action)
    others = [a for a in candidate_actions(match, rng) if a not in legal]
    for action in rng.sample(others, min(SAMPLED_REFUSALS, len(others))):
        with pytest.raises(GameError) as refused:
            apply(match, seat, action)
        assert refused.value.code == expected_refusal(match, action), (hand.phase, action)
    assert encode(match) == before  # apply never changes its input
    return len(others)


@pytest.mark.parametrize("variant", ["classic", "box"])
def test_legal_actions_are_exactly_what_apply_accepts_in_every_state(variant):
    refusals = 0
    for seed in range(MATCHES):
        rng = random.Random(seed)

        def check(match):
            nonlocal refusals
            refusals += check_vocabulary(match, rng)

        play_match(variant, seed, check=check)
    assert refusals > 1000


def test_a_knock_is_listed_for_exactly_the_discards_that_leave_deadwood_within_the_limit():
    for seed in range(20):
        def check(match):
            hand = match.hand
            if hand is None or hand.phase is not Phase.DISCARD:
                return
            holding = hand.holding(hand.turn)
            knocks = {a.discard for a in hand.legal_actions(match.rules) if isinstance(a, Knock)}
            within = {c for c in cards_of(holding) if c != hand.taken
                      and min_deadwood_mask(holding ^ c.bit)[0] <= match.rules.knock_limit}
            assert knocks == within
            assert hand.can_knock(match.rules) is bool(within)

        play_match("classic", seed, check=check)


@pytest.mark.parametrize("variant", ["classic", "box"])
def test_every_event_is_registered_says_whose_turn_comes_next_and_survives_storage(variant):
    match, events, _, _ = play_match(variant, 3)
    for event in events:
        assert event.type in EVENT_TYPES
        spec = EVENT_TYPES[event.type]
        assert set(event.public) == {f.name for f in spec.public}, event.type
        assert set(event.secret) <= {f.name for f in spec.secret}, event.type
        assert decode_event(encode_event(event)) == event
    assert events[-1].turn is None  # the match is over: nobody is to act


def test_an_events_turn_is_the_seat_to_act_once_its_step_is_done():
    match, events = new_match("classic", ["Ann", "Bob"], rules_for("classic"), seed=5)
    assert {e.turn for e in events} == {match.turn}
    seat = match.turn
    match, events = apply(match, seat, Pass())
    assert [e.turn for e in events] == [match.turn] and match.turn != seat


def test_events_of_the_first_storage_format_still_read():
    stored = json.loads((Path(__file__).parent / "format1_match.json").read_text())
    events = [decode_event(text) for text in stored["events"]]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    cut = events[0]
    assert cut.type.value == "cut" and isinstance(cut.public["cards"], list)
    deal = next(e for e in events if e.type.value == "deal")
    assert isinstance(deal.public["roles"], list)
    draws = [e for e in events if e.type.value == "draw" and e.public["source"] == "stock"]
    assert draws
    shown = redact_event(encode_event(draws[0]), draws[0].seat)
    assert shown["card"] is not None and redact_event(encode_event(draws[0]), None)["card"] is None


def test_a_match_of_the_first_storage_format_still_reads_and_plays_on():
    stored = json.loads((Path(__file__).parent / "format1_match.json").read_text())
    match = decode(stored["match"])
    assert match.last_hand is not None and match.last_hand.points == 33 and match.scores == (0, 33)
    assert match.seed == "7" and match.bots == (None, None) and match.timeouts == (0, 0)
    seat = match.turn
    played, _ = apply(match, seat, match.hand.legal_actions(match.rules)[0])
    assert decode(encode(played)) == played


@pytest.mark.parametrize(("kind", "body", "code", "field"), [
    (ActionType.DISCARD, {"card": "10d"}, "invalid_card", "card"),
    (ActionType.DISCARD, {}, "invalid_card", "card"),
    (ActionType.KNOCK, {"discard": "Kd", "melds": [["As", "2s", "3x"]]}, "invalid_card", "melds.0.2"),
    (ActionType.KNOCK, {"discard": "Kd", "melds": "As"}, "invalid_request", "melds"),
    (ActionType.LAYOFF, {"layoffs": [{"card": "7s", "meld": -1}]}, "invalid_request", "layoffs.0.meld"),
    (ActionType.LAYOFF, {"layoffs": [{"card": "7x", "meld": 0}]}, "invalid_card", "layoffs.0.card"),
    (ActionType.DRAW, {"source": "deck"}, "invalid_request", "source"),
    (ActionType.ADVICE, {"message": "go", "action": {"type": "advice"}}, "invalid_request", "action.type"),
    (ActionType.ADVICE, {"message": "go", "action": {"type": "discard", "card": "Zz"}}, "invalid_card", "action.card"),
    ("fly", {}, "invalid_request", "type"),
])
def test_a_malformed_action_is_refused_naming_its_field(kind, body, code, field):
    with pytest.raises(GameError) as refused:
        parse_action(kind, body)
    assert (refused.value.status, refused.value.code, refused.value.field) == (422, code, field)
