"""docs/rules.md, "Who sees what" (what each viewer may see, the 52 cards, the hand sizes), the views' legal
actions, the codec that stores a match and the event history that audits and replays it."""
from __future__ import annotations

import json

import pytest

from service.rules import (CARDS, Discard, Draw, Pass, Phase, UnknownFormat, apply, decode, encode, encode_event,
                           new_match, redact_event, rules_for, view_for)
from service.rules.cards import cards_of
from tests.rules.scripted import (BOX_PLAYER, CAPTAIN, DEALER, NAMES, NON_DEALER, SITTER, card, cards, cards_shown,
                                  knock_at_once, play, playout, start)

KNOCKER = "4s 5s 6s | 9c 9d 9h | Ac 2c 3c | Kd"  # + upcard 2d, discard Kd: K = 2
OTHER = "Kc Kh Ks | Qd Jd Td | 2h 5h 8c Th"
PLAYOUTS = [("classic", 1), ("box", 2)]


def viewers(match) -> list[int | None]:
    return [None, *range(match.seat_count)]


def table_view(match, viewer) -> dict:
    """A view without ``last_hand``, which may show the cards of the hand before (shown after it ended)."""
    return {k: v for k, v in view_for(match, viewer).items() if k != "last_hand"}


# --- Who sees what -------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["classic", "box"])
def test_a_player_sees_their_own_hand_and_nobody_elses(variant):
    match = start(variant, non_dealer=KNOCKER, dealer=OTHER, upcard="2d")
    for seat, mine, theirs in [(match.hand.non_dealer, KNOCKER, OTHER), (match.hand.dealer, OTHER, KNOCKER)]:
        view = view_for(match, seat)
        assert set(cards(" ".join(view["you"]["hand"]))) == set(cards(mine))
        assert not cards_shown(view) & set(cards(theirs))
        assert "partner" not in view["you"]


def test_the_sitter_sees_the_captains_hand_as_partner_but_not_the_box_players():
    match = start("box", non_dealer=KNOCKER, dealer=OTHER, upcard="2d")
    you = view_for(match, SITTER)["you"]
    assert (you["role"], you["hand"], you["legal_actions"]) == ("sitter", [], [])
    captain = view_for(match, CAPTAIN)["you"]
    assert you["partner"]["seat"] == CAPTAIN
    assert set(cards(" ".join(you["partner"]["hand"]))) == set(cards(KNOCKER))
    assert you["partner"]["legal_actions"] == captain["legal_actions"] == ["draw", "pass"]
    assert not cards_shown(view_for(match, SITTER)) & set(cards(OTHER))


def test_the_public_view_has_no_you_and_shows_only_the_pile_and_the_cards_laid_down():
    match = start("box", non_dealer=KNOCKER, dealer=OTHER, upcard="2d")
    taken, _ = play(match, (CAPTAIN, Draw("discard")))
    for position in (match, taken, play(taken, (CAPTAIN, Discard(card("Kd"))))[0]):
        view = view_for(position, None)
        assert "you" not in view
        assert cards_shown(view) == set(position.hand.pile)
    knocked = knock_at_once(match, "Kd")
    assert cards_shown(view_for(knocked, None)) == set(cards(KNOCKER + " 2d"))  # melds, deadwood, the Kd discard
    assert not cards_shown(view_for(knocked, None)) & set(cards(OTHER))


@pytest.mark.parametrize("variant, seed", PLAYOUTS)
def test_no_view_and_no_event_ever_reveals_a_card_of_the_stock(variant, seed):
    def check(_before, _move, after, events):
        if after.hand is None:
            return
        stock = set(after.hand.stock)
        for viewer in viewers(after):
            assert not cards_shown(table_view(after, viewer)) & stock
            for event in (e for e in events if e.hand == after.hand.number):
                assert not cards_shown(redact_event(encode_event(event), viewer)) & stock, event.type

    playout(variant, seed, on_step=check)


# --- Legal actions per phase -----------------------------------------------------------------------

def actions(match, seat):
    you = view_for(match, seat)["you"]
    return you["legal_actions"], you["draw_sources"]


def test_legal_actions_and_draw_sources_follow_the_phase():
    match = start(non_dealer=KNOCKER, dealer=OTHER, upcard="2d")
    assert actions(match, NON_DEALER) == (["draw", "pass"], ["discard"]) and actions(match, DEALER) == ([], [])
    passed, _ = play(match, (NON_DEALER, Pass()))
    assert actions(passed, DEALER) == (["draw", "pass"], ["discard"]) and actions(passed, NON_DEALER) == ([], [])
    both, _ = play(passed, (DEALER, Pass()))
    assert actions(both, NON_DEALER) == (["draw"], ["stock"])
    low, _ = play(match, (NON_DEALER, Draw("discard")))  # with 2d: K = 2 after the Kd
    assert actions(low, NON_DEALER) == (["discard", "knock"], [])
    high, _ = play(both, (NON_DEALER, Draw("stock")), (NON_DEALER, Discard(card("4s"))))
    assert actions(high, DEALER) == (["draw"], ["stock", "discard"])
    high, _ = play(high, (DEALER, Draw("stock")))
    assert actions(high, DEALER) == (["discard"], []) and not view_for(high, DEALER)["you"]["can_knock"]
    knocked = knock_at_once(match, "Kd")
    assert actions(knocked, DEALER) == (["layoff"], []) and actions(knocked, NON_DEALER) == ([], [])
    assert "best_layoff" in view_for(knocked, DEALER)["you"]


# --- Invariants along whole matches ----------------------------------------------------------------

@pytest.mark.parametrize("variant, seed", PLAYOUTS)
def test_the_52_cards_are_always_partitioned_and_active_players_hold_10_or_11(variant, seed):
    def check(_before, _move, after, _events):
        hand = after.hand
        if hand is None:
            return
        places = [list(hand.stock), list(hand.pile), *(cards_of(hand.holding(s)) for s in hand.seats)]
        assert sorted(c.index for place in places for c in place) == [c.index for c in CARDS]
        for seat in hand.seats:
            mid_turn = hand.turn == seat and hand.phase is Phase.DISCARD
            assert len(view_for(after, seat)["you"]["hand"]) == (11 if mid_turn else 10)

    playout(variant, seed, on_step=check)


# --- The codec -----------------------------------------------------------------------------------

@pytest.mark.parametrize("variant, seed", PLAYOUTS)
def test_the_codec_round_trips_a_match_at_every_point(variant, seed):
    def round_trip(match):
        assert decode(json.loads(json.dumps(encode(match)))) == match

    final, _, _ = playout(variant, seed, on_step=lambda before, _m, _a, _e: round_trip(before))
    round_trip(final)
    round_trip(knock_at_once(start(variant, non_dealer=KNOCKER, dealer=OTHER, upcard="2d"), "Kd"))


def test_the_codec_refuses_an_unknown_stored_format():
    stored = encode(new_match("classic", NAMES["classic"], rules_for("classic"), seed=1)[0])
    with pytest.raises(UnknownFormat):
        decode({**stored, "fmt": stored["fmt"] + 1})


# --- Events --------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant, seed", PLAYOUTS)
def test_every_applied_action_yields_numbered_events(variant, seed):
    def check(before, _move, after, events):
        assert events and after.version == before.version + 1
        assert [e.seq for e in events] == list(range(before.event_count + 1, after.event_count + 1))

    playout(variant, seed, on_step=check)


@pytest.mark.parametrize("variant, seed", PLAYOUTS)
def test_event_secrets_are_shown_only_to_the_seats_that_may_see_them(variant, seed):
    kinds = set()

    def check(_before, _move, after, events):
        for event in (e for e in events if e.secret):
            kinds.add(event.type)
            expected = () if event.seat is None else after.watchers(event.seat)
            assert set(event.seen_by) == set(expected), event.type
            for viewer in viewers(after):
                shown = redact_event(encode_event(event), viewer)
                revealed = all(shown.get(name) == value for name, value in event.secret.items())
                assert revealed is (viewer in event.seen_by)

    playout(variant, seed, on_step=check)
    assert kinds == {"deal", "dealt", "draw"}


def test_the_sitter_sees_the_captains_secrets_and_nobody_elses():
    match = start("box", non_dealer=KNOCKER, dealer=OTHER, upcard="2d")
    match, events = play(match, (CAPTAIN, Pass()), (BOX_PLAYER, Pass()), (CAPTAIN, Draw("stock")),
                         (CAPTAIN, Discard(card("Kd"))), (BOX_PLAYER, Draw("stock")))
    captain_draw, box_draw = (e for e in events if e.type == "draw")
    assert set(captain_draw.seen_by) == {CAPTAIN, SITTER} and box_draw.seen_by == (BOX_PLAYER,)


@pytest.mark.parametrize("variant, seed", PLAYOUTS)
def test_replaying_the_seed_and_the_recorded_actions_reproduces_the_match(variant, seed):
    final, moves, events = playout(variant, seed)
    replay, replayed = new_match(variant, NAMES[variant], rules_for(variant), seed=seed)
    for seat, action in moves:
        replay, produced = apply(replay, seat, action)
        replayed += produced
    assert encode(replay) == encode(final) and replayed == events
