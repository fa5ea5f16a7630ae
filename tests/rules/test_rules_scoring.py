"""docs/rules.md, "Scoring a hand": K = knocker's deadwood, D = defender's deadwood after melds and lay-offs.

In every hand below the non-dealer takes the upcard and knocks at once; the dealer defends with
the engine's best melds and lay-offs.
"""
from __future__ import annotations

import pytest

from tests.rules.scripted import BOX_PLAYER, CAPTAIN, DEALER, NON_DEALER, SITTER, knocked_hand

#            melds                    | deadwood
KNOCKER = "4s 5s 6s | 9c 9d 9h | Ac 2c 3c | Kd"  # discards Kd after taking the upcard


@pytest.mark.parametrize("variant, gin_bonus", [("classic", 20), ("box", 25)])
def test_gin_scores_the_gin_bonus_plus_the_defenders_deadwood(variant, gin_bonus):
    # KNOCKER + 7s: 4s 5s 6s 7s | 9c 9d 9h | Ac 2c 3c -> K = 0
    defender = "Kc Kh Ks | Qd Jd Td | 2h 5h 8c 9s"  # D = 2 + 5 + 8 + 9 = 24, and 9s may not be laid off
    last = knocked_hand(variant, knocker=KNOCKER, defender=defender, upcard="7s", discard="Kd").last_hand.as_dict()
    assert (last["outcome"], last["knocker_deadwood"], last["defender_deadwood"]) == ("gin", 0, 24)
    assert (last["winner"], last["points"]) == (NON_DEALER, gin_bonus + 24)


def test_gin_against_a_defender_with_no_deadwood_still_scores_only_for_the_knocker():
    defender = "Kc Kh Ks | Qd Jd Td | 2h 3h 4h 5h"  # D = 0
    match = knocked_hand(knocker=KNOCKER, defender=defender, upcard="7s", discard="Kd")
    last = match.last_hand.as_dict()
    assert (last["outcome"], last["defender_deadwood"], last["winner"], last["points"]) == ("gin", 0, NON_DEALER, 20)
    assert match.scores[DEALER] == 0 and match.hands_won[DEALER] == 0


def test_knock_with_less_deadwood_than_the_defender_scores_the_difference():
    # KNOCKER + 2d: K = 2
    defender = "Kc Kh Ks | Qd Jd Td | 2h 5h 8c Th"  # D = 25
    last = knocked_hand(knocker=KNOCKER, defender=defender, upcard="2d", discard="Kd").last_hand.as_dict()
    assert (last["outcome"], last["knocker_deadwood"], last["defender_deadwood"]) == ("knock", 2, 25)
    assert (last["winner"], last["points"]) == (NON_DEALER, 25 - 2)


def test_undercut_on_equal_counts_scores_just_the_undercut_bonus():
    defender = "Kc Kh Ks | Qd Jd Td | 6h 7h 8h | 2h"  # D = 2 = K
    last = knocked_hand(knocker=KNOCKER, defender=defender, upcard="2d", discard="Kd").last_hand.as_dict()
    assert (last["outcome"], last["knocker_deadwood"], last["defender_deadwood"]) == ("undercut", 2, 2)
    assert (last["winner"], last["points"]) == (DEALER, 10)


def test_undercut_with_more_deadwood_than_the_defender_scores_the_bonus_plus_the_difference():
    # KNOCKER + 8d: K = 8
    defender = "Kc Kh Ks | Qd Jd Td | 6h 7h 8h | 3h"  # D = 3
    last = knocked_hand(knocker=KNOCKER, defender=defender, upcard="8d", discard="Kd").last_hand.as_dict()
    assert (last["outcome"], last["knocker_deadwood"], last["defender_deadwood"]) == ("undercut", 8, 3)
    assert (last["winner"], last["points"]) == (DEALER, 10 + 8 - 3)


def test_lay_offs_count_before_scoring():
    defender = "Kc Kh Ks | Qd Jd Td | 7s 8s | 5h 6h"  # 7s 8s go on 4s 5s 6s: D = 11, not 26
    last = knocked_hand(knocker=KNOCKER, defender=defender, upcard="2d", discard="Kd").last_hand.as_dict()
    assert (last["defender_deadwood"], last["winner"], last["points"]) == (11, NON_DEALER, 11 - 2)


@pytest.mark.parametrize("defender, winner", [
    ("Kc Kh Ks | Qd Jd Td | 2h 5h 8c Th", CAPTAIN),  # the captain knocks and wins
    ("Kc Kh Ks | Qd Jd Td | 6h 7h 8h | Ah", BOX_PLAYER),  # the box player undercuts
])
def test_in_the_box_game_the_sitter_never_scores_and_the_scorer_wins_the_hand(defender, winner):
    match = knocked_hand("box", knocker=KNOCKER, defender=defender, upcard="2d", discard="Kd")
    scored = match.last_hand.as_dict()
    assert scored["winner"] == winner and scored["points"] > 0
    assert match.scores[winner] == scored["points"] and match.hands_won[winner] == 1
    assert match.scores[SITTER] == 0 and match.hands_won[SITTER] == 0
    assert sum(match.scores) == scored["points"]
