"""docs/rules.md, "Cards" and "Melds and deadwood", one test per rule."""
from __future__ import annotations

import pytest

from service.rules import (CARDS, Draw, InvalidInput, Knock, analyze_hand, encode, new_match, parse_card, parse_cards,
                           rules_for)
from service.rules.cards import new_deck
from tests.rules.scripted import NAMES, NON_DEALER, card, cards, groups, play, refusal, start


def test_one_deck_of_52_cards_ranks_ace_to_king_suits_cdhs():
    assert len(set(CARDS)) == 52
    assert {str(c) for c in CARDS} == {rank + suit for rank in "A23456789TJQK" for suit in "cdhs"}
    assert [parse_card(rank + "s").rank for rank in "A23456789TJQK"] == list(range(13))  # low to high


def test_wire_notation_is_rank_then_lower_case_suit_and_round_trips():
    assert [str(parse_card(text)) for text in ("As", "Td", "Kh", "2c")] == ["As", "Td", "Kh", "2c"]
    for each in CARDS:
        assert parse_card(str(each)) == each


@pytest.mark.parametrize("bad", ["10d", "as", "AS", "Ax", "", None, 5, "Tdd", " As", "1s"])
def test_anything_else_is_rejected_with_an_error_naming_the_bad_value(bad):
    with pytest.raises(InvalidInput) as caught:
        parse_card(bad, field="card")
    assert caught.value.code == "invalid_card"
    assert caught.value.field == "card"
    assert repr(bad) in caught.value.detail


@pytest.mark.parametrize(("bad", "named"), [("10d", "10d"), (None, "null"), (5, "5"), (["As"], '["As"]'),
                                            ("x" * 30, "x" * 20 + "…"), ({1, 2}, "{1, 2}")])
def test_the_bad_value_is_named_in_params_as_sent(bad, named):
    # Text as it is, other JSON values as JSON, anything else (the engine's own callers) as repr.
    with pytest.raises(InvalidInput) as caught:
        parse_card(bad, field="card")
    assert caught.value.params == {"value": named}


def test_a_list_of_cards_may_not_name_a_card_twice():
    with pytest.raises(InvalidInput) as caught:
        parse_cards(["As", "Kd", "As"])
    assert caught.value.code == "invalid_card" and "As" in caught.value.detail


@pytest.mark.parametrize("rank, value", [("A", 1), ("2", 2), ("3", 3), ("4", 4), ("5", 5), ("6", 6), ("7", 7),
                                         ("8", 8), ("9", 9), ("T", 10), ("J", 10), ("Q", 10), ("K", 10)])
def test_card_values_ace_1_two_to_nine_face_value_ten_and_court_cards_10(rank, value):
    for suit in "cdhs":
        assert parse_card(rank + suit).value == value
        assert analyze_hand([rank + suit]).deadwood == value


def test_ace_is_low_a23_is_a_run_qka_and_ka2_are_not():
    assert analyze_hand(cards("Ah 2h 3h")).deadwood == 0
    assert analyze_hand(cards("Qh Kh Ah")).deadwood == 10 + 10 + 1
    assert analyze_hand(cards("Kh Ah 2h")).deadwood == 10 + 1 + 2
    # Nor may a knocker declare them as runs.
    match = start(non_dealer="Qs Ks 2s | Ah 2h 3h | 7c 8c 9c | 4d", dealer="Kc Kd Kh | Qc Qd Qh | Jc Jd Jh | Tc",
                  upcard="As")
    match, _ = play(match, (NON_DEALER, Draw("discard")))
    for discard, melds in [("4d", "Ah 2h 3h | 7c 8c 9c | Qs Ks As"), ("Qs", "Ah 2h 3h | 7c 8c 9c | Ks As 2s")]:
        assert refusal(match, NON_DEALER, Knock(card(discard), groups(melds))).code == "invalid_melds"


def test_seeded_shuffle_is_deterministic_and_unseeded_shuffles_differ():
    def created(seed):
        return new_match("classic", NAMES["classic"], rules_for("classic"), seed=seed)

    (first, first_events), (again, again_events) = created(7), created(7)
    assert encode(first) == encode(again) and first_events == again_events
    assert encode(created(8)[0])["hand"] != encode(first)["hand"]
    unseeded = [encode(created(None)[0])["hand"] for _ in range(3)]
    assert len({str(hand) for hand in unseeded}) == 3
    assert len({tuple(new_deck(None, "deal:1")) for _ in range(3)}) == 3


def test_a_set_is_three_or_four_cards_of_one_rank():
    assert analyze_hand(cards("9c 9d 9h")).melds == (tuple(cards("9c 9d 9h")),)
    assert analyze_hand(cards("9c 9d 9h 9s")).melds == (tuple(cards("9c 9d 9h 9s")),)
    assert analyze_hand(cards("9c 9d")).deadwood == 18
    assert analyze_hand(cards("9c 9d 8h")).deadwood == 26


def test_a_run_is_three_or_more_consecutive_ranks_of_one_suit():
    assert analyze_hand(cards("4s 5s 6s")).deadwood == 0
    assert analyze_hand(cards("4s 5s 6s 7s 8s 9s Ts")).deadwood == 0
    assert analyze_hand(cards("4s 5s")).deadwood == 9
    assert analyze_hand(cards("4s 5s 7s")).deadwood == 16  # not consecutive
    assert analyze_hand(cards("4s 5h 6s")).deadwood == 15  # not one suit


def test_a_card_belongs_to_at_most_one_meld_and_the_solver_picks_its_better_use():
    # 9h fits the run 7h 8h 9h and the set 9c 9d 9h: the set leaves 7h 8h (15), the run 9c 9d (18).
    both = analyze_hand(cards("7h 8h 9h 9c 9d"))
    assert both.melds == (tuple(cards("9c 9d 9h")),) and both.deadwood == 15
    # With the fourth nine, 9h goes to the run and the other three nines make the set.
    four = analyze_hand(cards("7h 8h 9h 9c 9d 9s"))
    assert four.deadwood == 0 and sorted(map(len, four.melds)) == [3, 3]
    melded = [c for meld in four.melds for c in meld]
    assert len(melded) == len(set(melded)) == 6


def test_min_deadwood_is_the_least_count_over_all_arrangements():
    #   3c 4c 5c | 5h 6h 7h | 5d    two runs leave 5d: 5
    #   5c 5d 5h | 3c 4c 6h 7h      the set would leave 20
    hand = analyze_hand(cards("3c 4c 5c 5d 5h 6h 7h"))
    assert hand.deadwood == 5 and hand.deadwood_cards == (card("5d"),)
    # Ten cards where 4c fits the run A-2-3-4c and the set 4c 4d 4h:
    #   Ac 2c 3c 4c | 4h 5h 6h | 4d Kd Qs    leaves 24, the least
    #   Ac 2c 3c | 4c 4d 4h | 5h 6h Kd Qs    would leave 31
    ten = analyze_hand(cards("Ac 2c 3c 4c 4d 4h 5h 6h Kd Qs"))
    assert ten.deadwood == 24 and set(ten.deadwood_cards) == set(cards("4d Kd Qs"))
