"""docs/rules.md, "Seats, the cut and the dealer" (the deal itself) and "A hand, turn by turn", one test per rule."""
from __future__ import annotations

import pytest

from service.rules import (Discard, Draw, Knock, LayOff, Match, Pass, Phase, best_layoff, encode_event, new_match,
                           redact_event, rules_for, view_for)
from tests.rules.scripted import (DEALER, NAMES, NON_DEALER, card, cards, cards_shown, groups, held, knock_at_once,
                                  play, refusal, start, stock_turns)

#            melds                    | deadwood
KNOCKER = "4s 5s 6s | 9c 9d 9h | Ac 2c 3c | Kd"  # takes the upcard 2d and discards Kd: K = 2
TABLE = "4s 5s 6s | 9c 9d 9h | Ac 2c 3c"  # the knocker's melds 0, 1 and 2 as laid down
OPPONENT = "Kc Kh Ks | Qd Jd Td | 5h 6h | 7c 8c"
UPCARD = "2d"


def knocked_against(defender: str) -> Match:
    """KNOCKER (the non-dealer) takes the upcard 2d, discards Kd and lays TABLE down: K = 2."""
    return knock_at_once(start(non_dealer=KNOCKER, dealer=defender, upcard=UPCARD), "Kd", melds=TABLE)


# --- The deal -----------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["classic", "box"])
def test_deal_ten_each_one_at_a_time_from_the_non_dealer_then_the_upcard_and_31_in_stock(variant):
    match, events = new_match(variant, NAMES[variant], rules_for(variant), seed=3)
    assert [e.type for e in events if e.type != "cut"] == ["deal", "dealt", "dealt"]
    deck = cards(" ".join(next(e for e in events if e.type == "deal").secret["deck"]))
    hand = match.hand
    assert held(match, hand.non_dealer) == set(deck[0:20:2])
    assert held(match, hand.dealer) == set(deck[1:20:2])
    assert hand.pile == (deck[20],)
    assert list(reversed(hand.stock)) == deck[21:] and len(hand.stock) == 31
    public = view_for(match, None)["hand"]
    assert public["discard_top"] == str(deck[20]) and public["stock_count"] == 31
    assert public["hand_sizes"] == {str(hand.non_dealer): 10, str(hand.dealer): 10}


@pytest.mark.parametrize("variant", ["classic", "box"])
def test_the_cut_and_the_deal_are_recorded_and_the_deck_is_shown_to_nobody(variant):
    match, events = new_match(variant, NAMES[variant], rules_for(variant), seed=5)
    cut, deal = events[0], next(e for e in events if e.type == "deal")
    assert cut.type == "cut" and len(cut.public["cards"]) == len(NAMES[variant])
    assert deal.public["dealer"] == match.hand.dealer and deal.public["upcard"] == str(match.hand.pile[-1])
    assert len(deal.secret["deck"]) == 52 and deal.seen_by == ()
    for viewer in [None, *range(len(NAMES[variant]))]:
        shown = redact_event(encode_event(deal), viewer)
        assert "deck" not in shown and cards_shown(shown) == {match.hand.pile[-1]}


# --- 1. The upcard offer -------------------------------------------------------------------------

def test_the_upcard_is_offered_to_the_non_dealer_first_then_to_the_dealer():
    match = start(non_dealer=KNOCKER, dealer=OPPONENT, upcard=UPCARD)
    assert match.hand.phase is Phase.UPCARD_OFFER and match.hand.turn == NON_DEALER
    assert refusal(match, DEALER, Draw("discard")).code == "not_your_turn"
    assert refusal(match, NON_DEALER, Draw("stock")).code == "wrong_phase"  # take the upcard or pass
    match, _ = play(match, (NON_DEALER, Pass()))
    assert match.hand.phase is Phase.UPCARD_OFFER and match.hand.turn == DEALER
    match, _ = play(match, (DEALER, Draw("discard")))
    assert card(UPCARD) in held(match, DEALER) and match.hand.phase is Phase.DISCARD


@pytest.mark.parametrize("taker, other", [(NON_DEALER, DEALER), (DEALER, NON_DEALER)])
def test_the_upcard_taker_discards_another_card_then_the_other_player_has_a_normal_turn(taker, other):
    match = start(non_dealer=KNOCKER, dealer=OPPONENT, upcard=UPCARD)
    if taker == DEALER:
        match, _ = play(match, (NON_DEALER, Pass()))
    match, _ = play(match, (taker, Draw("discard")))
    assert refusal(match, taker, Discard(card(UPCARD))).code == "cannot_discard_drawn_card"
    mine = sorted(held(match, taker) - {card(UPCARD)}, key=str)[0]
    match, _ = play(match, (taker, Discard(mine)))
    hand = match.hand
    assert (hand.phase, hand.turn, hand.pile[-1]) == (Phase.DRAW, other, mine)
    assert hand.draw_sources() == ("stock", "discard")


def test_when_both_pass_the_non_dealer_begins_and_must_draw_from_the_stock():
    match = start(non_dealer=KNOCKER, dealer=OPPONENT, upcard=UPCARD, stock="5d")
    match, _ = play(match, (NON_DEALER, Pass()), (DEALER, Pass()))
    assert (match.hand.phase, match.hand.turn) == (Phase.DRAW, NON_DEALER)
    assert refusal(match, NON_DEALER, Draw("discard")).code == "wrong_phase"
    match, _ = play(match, (NON_DEALER, Draw("stock")))
    assert card("5d") in held(match, NON_DEALER)


# --- 2. A normal turn ----------------------------------------------------------------------------

def test_a_normal_turn_is_draw_from_stock_or_pile_then_discard():
    match = start(non_dealer=KNOCKER, dealer=OPPONENT, upcard=UPCARD, stock="5d 6d")
    match, _ = play(match, (NON_DEALER, Pass()), (DEALER, Pass()))
    assert refusal(match, NON_DEALER, Discard(card("Kd"))).code == "wrong_phase"  # draw first
    match, _ = play(match, (NON_DEALER, Draw("stock")))
    assert refusal(match, NON_DEALER, Draw("stock")).code == "wrong_phase"  # one draw per turn
    match, _ = play(match, (NON_DEALER, Discard(card("Kd"))))
    match, _ = play(match, (DEALER, Draw("discard")))  # the top of the pile: Kd
    assert card("Kd") in held(match, DEALER) and len(held(match, DEALER)) == 11
    match, _ = play(match, (DEALER, Discard(card("5h"))))
    assert match.hand.pile[-1] == card("5h") and (match.hand.phase, match.hand.turn) == (Phase.DRAW, NON_DEALER)


def test_a_card_taken_from_the_discard_pile_cannot_be_discarded_that_turn():
    match = start(non_dealer=KNOCKER, dealer=OPPONENT, upcard=UPCARD, stock="5d 6d 7d")
    match, _ = play(match, (NON_DEALER, Pass()), (DEALER, Pass()),
                    (NON_DEALER, Draw("stock")), (NON_DEALER, Discard(card("5d"))),  # from the stock: may go at once
                    (DEALER, Draw("discard")))
    assert refusal(match, DEALER, Discard(card("5d"))).code == "cannot_discard_drawn_card"
    assert refusal(match, DEALER, Knock(card("5d"))).code == "cannot_discard_drawn_card"
    match, _ = play(match, (DEALER, Discard(card("5h"))),
                    (NON_DEALER, Draw("stock")), (NON_DEALER, Discard(card("6d"))),
                    (DEALER, Draw("stock")), (DEALER, Discard(card("5d"))))  # a turn later it may go
    assert match.hand.pile[-1] == card("5d")


# --- 3. Knock ------------------------------------------------------------------------------------

def test_a_player_may_knock_on_the_very_first_turn():
    match = knock_at_once(start(non_dealer=KNOCKER, dealer=OPPONENT, upcard=UPCARD), "Kd")
    knock = view_for(match, None)["hand"]["knock"]
    assert (match.hand.phase, match.hand.turn) == (Phase.LAYOFF, DEALER)
    assert knock["knocker"] == NON_DEALER and knock["deadwood"] == 2 and knock["deadwood_cards"] == [UPCARD]


LIMIT_DEFENDER = "Kc Kh Ks | Qc Qh Qs | Jc Jh Js | Tc"


@pytest.mark.parametrize("knocker, rules, deadwood, accepted", [
    ("4s 5s 6s 7s | 9c 9d 9h | 3d 7h | Kd", {}, 10, True),  # the default limit is 10
    ("4s 5s 6s 7s | 9c 9d 9h | 4d 7h | Kd", {}, 11, False),
    ("4s 5s 6s 7s | 9c 9d 9h | 2d 3h | Kd", {"knock_limit": 5}, 5, True),
    ("4s 5s 6s 7s | 9c 9d 9h | 2d 4h | Kd", {"knock_limit": 5}, 6, False),
    ("4s 5s 6s 7s | 9c 9d 9h | Ah 2h | Kd", {"knock_limit": 0}, 3, False),  # gin only
])
def test_the_deadwood_after_the_discard_must_not_exceed_the_knock_limit(knocker, rules, deadwood, accepted):
    match = start(non_dealer=knocker, dealer=LIMIT_DEFENDER, upcard="9s", rules=rules)  # 9s joins the nines
    match, _ = play(match, (NON_DEALER, Draw("discard")))
    if accepted:
        match, _ = play(match, (NON_DEALER, Knock(card("Kd"))))
        assert match.hand.knock.deadwood == deadwood
    else:
        error = refusal(match, NON_DEALER, Knock(card("Kd")))
        assert error.code == "deadwood_too_high" and str(deadwood) in error.detail


ACES = "Ac Ad Ah As 2s 3s | 7d 8d 9d | Kc"  # takes the upcard 5h, discards Kc
ACES_DEFENDER = "4s | Kd Kh Ks | Qc Qd Qs | Jc Jd Js"


def test_the_knocker_may_choose_the_arrangement_and_its_deadwood_counts():
    # The engine's arrangement: Ac Ad Ah | As 2s 3s | 7d 8d 9d | 5h -> K = 5, and 4s lays off on As 2s 3s.
    engine = knock_at_once(start(non_dealer=ACES, dealer=ACES_DEFENDER, upcard="5h"), "Kc")
    assert engine.hand.knock.deadwood == 5
    engine, _ = play(engine, (DEALER, LayOff()))
    assert engine.last_hand.as_dict()["layoffs"] == [{"card": "4s", "meld": engine.last_hand.as_dict()["knocker_melds"].index(
        ["As", "2s", "3s"])}]
    assert (engine.last_hand.as_dict()["outcome"], engine.last_hand.as_dict()["points"]) == ("undercut", 10 + 5 - 0)
    # The knocker's own: Ac Ad Ah As | 7d 8d 9d | 2s 3s 5h -> K = 10, above the minimum, and 4s fits nothing.
    chosen = knock_at_once(start(non_dealer=ACES, dealer=ACES_DEFENDER, upcard="5h"), "Kc",
                           melds="Ac Ad Ah As | 7d 8d 9d")
    assert chosen.hand.knock.deadwood == 10
    own = groups("Kd Kh Ks | Qc Qd Qs | Jc Jd Js")
    assert refusal(chosen, DEALER, LayOff(own, ((card("4s"), 0),))).code == "invalid_layoff"
    chosen, _ = play(chosen, (DEALER, LayOff()))
    assert chosen.last_hand.as_dict()["layoffs"] == [] and chosen.last_hand.as_dict()["defender_deadwood"] == 4
    assert (chosen.last_hand.as_dict()["outcome"], chosen.last_hand.as_dict()["points"]) == ("undercut", 10 + 10 - 4)
    # A chosen arrangement above the limit may not knock, even though a better one exists.
    match, _ = play(start(non_dealer=ACES, dealer=ACES_DEFENDER, upcard="5h"), (NON_DEALER, Draw("discard")))
    too_high = Knock(card("Kc"), groups("Ac Ad Ah | 7d 8d 9d"))  # leaves As 2s 3s 5h: 11
    assert refusal(match, NON_DEALER, too_high).code == "deadwood_too_high"


@pytest.mark.parametrize("discard, melds, code", [
    ("Kc", "Ac Ad | 7d 8d 9d | As 2s 3s", "invalid_melds"),  # a pair is no meld
    ("Kc", "Ac Ad Ah | 7d 8d 9d Td | As 2s 3s", "card_not_in_hand"),
    ("Kc", "Ac Ad Ah As | As 2s 3s | 7d 8d 9d", "invalid_melds"),  # As twice
    ("9d", "Ac Ad Ah | As 2s 3s | 7d 8d 9d", "invalid_melds"),  # the discard inside a meld
])
def test_an_invalid_arrangement_is_refused(discard, melds, code):
    match, _ = play(start(non_dealer=ACES, dealer=ACES_DEFENDER, upcard="5h"), (NON_DEALER, Draw("discard")))
    assert refusal(match, NON_DEALER, Knock(card(discard), groups(melds))).code == code


@pytest.mark.parametrize("melds", ["Ac Ad Ah As | As 2s 3s | 7d 8d 9d", "Ac Ac Ad | As 2s 3s | 7d 8d 9d"],
                         ids=["in-two-melds", "twice-in-one-meld"])
def test_a_card_named_twice_in_the_melds_is_refused_and_named(melds):
    match, _ = play(start(non_dealer=ACES, dealer=ACES_DEFENDER, upcard="5h"), (NON_DEALER, Draw("discard")))
    refused = refusal(match, NON_DEALER, Knock(card("Kc"), groups(melds)))
    assert (refused.code, refused.params["reason"]) == ("invalid_melds", "card_used_twice")
    assert "named more than once" in str(refused)


def test_knocking_is_never_compulsory():
    match, _ = play(start(non_dealer=KNOCKER, dealer=OPPONENT, upcard="7s"), (NON_DEALER, Draw("discard")))
    you = view_for(match, NON_DEALER)["you"]
    assert you["can_knock"] and you["deadwood"] == 0 and "knock" in you["legal_actions"]  # gin, even
    match, _ = play(match, (NON_DEALER, Discard(card("Kd"))))
    assert (match.hand.phase, match.hand.turn) == (Phase.DRAW, DEALER)


# --- 4. Lay-off ----------------------------------------------------------------------------------

OWN = "Kc Kh Ks | Qd Jd Td"  # the defender's own melds below


def test_layoffs_may_chain_7s_then_8s_onto_4s_5s_6s_but_not_8s_first():
    match = knocked_against(OWN + " | 7s 8s | 5h 6h")
    backwards = LayOff(groups(OWN), ((card("8s"), 0), (card("7s"), 0)))
    assert refusal(match, DEALER, backwards).code == "invalid_layoff"
    match, _ = play(match, (DEALER, LayOff(groups(OWN), ((card("7s"), 0), (card("8s"), 0)))))
    last = match.last_hand.as_dict()
    assert last["layoffs"] == [{"card": "7s", "meld": 0}, {"card": "8s", "meld": 0}]
    assert last["defender_deadwood"] == 5 + 6
    assert (last["outcome"], last["winner"], last["points"]) == ("knock", NON_DEALER, 11 - 2)


def test_a_run_may_be_extended_at_either_end():
    match = knocked_against(OWN + " | 3s 7s | 5h 6h")
    match, _ = play(match, (DEALER, LayOff(groups(OWN), ((card("3s"), 0), (card("7s"), 0)))))
    assert match.last_hand.as_dict()["defender_deadwood"] == 5 + 6


def test_a_fourth_card_may_be_laid_off_on_a_set():
    match = knocked_against(OWN + " | 9s | 5h 6h 8h")
    assert refusal(match, DEALER, LayOff(groups(OWN), ((card("9s"), 0),))).code == "invalid_layoff"  # not on 4s 5s 6s
    match, _ = play(match, (DEALER, LayOff(groups(OWN), ((card("9s"), 1),))))
    assert match.last_hand.as_dict()["layoffs"] == [{"card": "9s", "meld": 1}]
    assert match.last_hand.as_dict()["defender_deadwood"] == 5 + 6 + 8


def test_the_defender_may_not_lay_off_on_their_own_melds():
    match = knocked_against("Kc Kh Ks | 5h 6h 7h | Qd Jd Td | 8h")
    own = groups("Kc Kh Ks | 5h 6h 7h | Qd Jd Td")
    assert refusal(match, DEALER, LayOff(own, ((card("8h"), 3),))).code == "invalid_layoff"  # the knocker has 3 melds
    assert refusal(match, DEALER, LayOff(own, ((card("Ks"), 1),))).code == "invalid_layoff"  # Ks is in a meld
    assert refusal(match, DEALER, LayOff(own, ((card("7s"), 0),))).code == "card_not_in_hand"
    match, _ = play(match, (DEALER, LayOff(groups("Kc Kh Ks | 5h 6h 7h 8h | Qd Jd Td"), ())))  # a longer meld instead
    assert (match.last_hand.as_dict()["defender_deadwood"], match.last_hand.as_dict()["outcome"]) == (0, "undercut")


def test_the_knocker_never_lays_off():
    match = knocked_against(OWN + " | 7s 8s | 5h 6h")
    assert refusal(match, NON_DEALER, LayOff()).code == "not_your_turn"
    match, _ = play(match, (DEALER, LayOff()))
    assert match.last_hand.as_dict()["number"] == 1 and match.hand.number == 2  # the hand ended with the defender's answer


def test_an_empty_layoff_is_the_engines_choice_leaving_the_least_deadwood():
    defender = OWN + " | 3s 7s 8s | 5h"
    match = knocked_against(defender)
    plan = best_layoff(match.hand.knock.melds, cards(defender))
    match, _ = play(match, (DEALER, LayOff()))
    last = match.last_hand.as_dict()
    assert plan.deadwood == last["defender_deadwood"] == 5
    assert last["layoffs"] == [{"card": str(c), "meld": i} for c, i in plan.layoffs]
    assert sorted(c["card"] for c in last["layoffs"]) == ["3s", "7s", "8s"]


GIN = "4s 5s 6s | 9c 9d 9h | Ac 2c 3c | Kd"  # takes the upcard 7s, discards Kd: gin
GIN_TABLE = "4s 5s 6s 7s | 9c 9d 9h | Ac 2c 3c"
GIN_DEFENDER = "Kc Kh Ks | Qd Jd Td | 8s 9s | 2h 5h"  # 8s fits the run, 9s the run after 8s or the nines


@pytest.mark.parametrize("rules, laid_off, deadwood", [
    ({}, [], 8 + 9 + 2 + 5),
    ({"layoff_on_gin": True}, ["8s", "9s"], 2 + 5),
])
def test_no_layoffs_against_gin_unless_the_rules_allow_them(rules, laid_off, deadwood):
    match = knock_at_once(start(non_dealer=GIN, dealer=GIN_DEFENDER, upcard="7s", rules=rules), "Kd", melds=GIN_TABLE)
    assert match.hand.knock.gin
    explicit = LayOff(groups(OWN), ((card("8s"), 0),))
    if rules:
        assert play(match, (DEALER, explicit))[0].last_hand.as_dict()["defender_deadwood"] == 9 + 2 + 5
    else:
        assert refusal(match, DEALER, explicit).code == "invalid_layoff"
    match, _ = play(match, (DEALER, LayOff()))
    assert sorted(c["card"] for c in match.last_hand.as_dict()["layoffs"]) == laid_off
    assert match.last_hand.as_dict()["defender_deadwood"] == deadwood


# --- 5. Dead hand --------------------------------------------------------------------------------

@pytest.mark.parametrize("rules, stock_left", [({}, 2), ({"dead_hand_stock": 10}, 10), ({"dead_hand_stock": 0}, 0)])
def test_a_plain_discard_leaving_the_dead_hand_stock_ends_the_hand_without_score(rules, stock_left):
    match = start(non_dealer=KNOCKER, dealer=OPPONENT, upcard=UPCARD, rules=rules)
    match, _ = play(match, (NON_DEALER, Pass()), (DEALER, Pass()))
    match, _ = stock_turns(match, 31 - stock_left - 1)
    assert len(match.hand.stock) == stock_left + 1 and match.hand.number == 1  # one more discard is allowed
    match, events = stock_turns(match, 1)
    assert match.last_hand.as_dict()["outcome"] == "dead" and match.last_hand.as_dict()["winner"] is None
    assert match.scores == (0, 0) and match.hands_won == (0, 0)
    assert [e.type for e in events][:3] == ["draw", "discard", "hand_scored"]


def test_knocking_after_drawing_the_50th_card_is_still_allowed():
    match = start(non_dealer=KNOCKER, dealer=OPPONENT, upcard=UPCARD)
    match, _ = play(match, (NON_DEALER, Pass()), (DEALER, Pass()))
    match, _ = stock_turns(match, 28)  # 20 dealt + the upcard + 28 drawn: 49 cards seen
    fiftieth = match.hand.stock[-1]
    match, _ = play(match, (NON_DEALER, Draw("stock")))
    assert len(match.hand.stock) == 2
    match, _ = play(match, (NON_DEALER, Knock(fiftieth)))  # KNOCKER keeps K = 10 (Kd)
    assert match.hand.phase is Phase.LAYOFF and match.hand.knock.deadwood == 10
