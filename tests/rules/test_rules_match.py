"""docs/rules.md, "Seats, the cut and the dealer" (cuts and who deals), "The match", "Rule options" and who may act."""
from __future__ import annotations

import json

import pytest

from service.rules import (Advise, Discard, Draw, Forbidden, InvalidInput, Knock, LayOff, Pass, Phase, RULE_OPTIONS,
                           apply, encode_event, new_match, redact_event, rules_for, view_for)
from tests.rules.scripted import (BOX_PLAYER, CAPTAIN, DEALER, NAMES, NON_DEALER, SITTER, card, knock_at_once, play,
                                  playout, redeal, refusal, start, stock_turns)

RANKS = "A23456789TJQK"
KNOCKER = "4s 5s 6s | 9c 9d 9h | Ac 2c 3c | Kd"  # + upcard 2d, discard Kd: K = 2
LOSER = "Kc Kh Ks | Qd Jd Td | 2h 5h 8c Th"  # D = 25 against KNOCKER: the knocker scores 23
UNDERCUTTER = "Kc Kh Ks | Qd Jd Td | 6h 7h 8h | Ah"  # D = 1 against KNOCKER: the defender scores 11


def cut_ranks(event) -> dict[int, int]:
    return {seat: RANKS.index(text[0]) for seat, text in enumerate(event.public["cards"])}


def cuts(events) -> list:
    return [e for e in events if e.type == "cut"]


# --- Cuts and who deals ----------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(8))
def test_classic_cut_the_higher_card_deals_the_first_hand(seed):
    match, events = new_match("classic", NAMES["classic"], rules_for("classic"), seed=seed)
    ranks = cut_ranks(cuts(events)[-1])
    assert match.dealer == match.hand.dealer == max(ranks, key=ranks.get)
    assert view_for(match, None)["players"][match.dealer]["role"] == "dealer"


@pytest.mark.parametrize("variant, seed", [("classic", 15), ("box", 9)])  # seeds whose first cut ties
def test_equal_cut_ranks_cut_again_and_every_cut_is_recorded(variant, seed):
    match, events = new_match(variant, NAMES[variant], rules_for(variant), seed=seed)
    first, last = cuts(events)[0], cuts(events)[-1]
    assert len(set(cut_ranks(first).values())) < len(NAMES[variant]) and not first.public["decided"]
    assert len(set(cut_ranks(last).values())) == len(NAMES[variant]) and last.public["decided"]
    ranks = cut_ranks(last)
    assert match.dealer == max(ranks, key=ranks.get)


@pytest.mark.parametrize("defender, winner", [(LOSER, NON_DEALER), (UNDERCUTTER, DEALER)])
def test_classic_the_winner_of_the_previous_hand_deals_the_next(defender, winner):
    match = knock_at_once(start(non_dealer=KNOCKER, dealer=defender, upcard="2d"), "Kd")
    match, _ = play(match, (DEALER, LayOff()))
    assert match.last_hand.as_dict()["winner"] == winner
    hand = match.hand
    assert match.dealer == hand.dealer == winner and hand.non_dealer == 1 - winner
    assert (hand.number, hand.phase, hand.turn) == (2, Phase.UPCARD_OFFER, 1 - winner)


@pytest.mark.parametrize("variant", ["classic", "box"])
def test_after_a_dead_hand_the_same_dealer_deals_again_and_the_hand_number_grows(variant):
    match = start(variant, non_dealer=KNOCKER, dealer=LOSER, upcard="2d")
    seats = (match.dealer, match.captain, match.sitter)
    match, _ = play(match, (match.hand.non_dealer, Pass()), (match.hand.dealer, Pass()))
    match, events = stock_turns(match, 29)
    assert match.last_hand.as_dict()["outcome"] == "dead"
    assert (match.dealer, match.captain, match.sitter) == seats and match.hand.dealer == seats[0]
    assert match.hand.number == match.deals == 2
    assert next(e for e in events if e.type == "deal").public["number"] == 2


@pytest.mark.parametrize("seed", [*range(6), 9])
def test_box_cut_highest_card_in_the_box_middle_captain_lowest_sits_out(seed):
    match, events = new_match("box", NAMES["box"], rules_for("box"), seed=seed)
    ranks = cut_ranks(cuts(events)[-1])
    low_to_high = sorted(ranks, key=ranks.get)
    assert (match.sitter, match.captain, match.dealer) == tuple(low_to_high)
    roles = [p["role"] for p in view_for(match, None)["players"]]
    assert [roles[s] for s in low_to_high] == ["sitter", "captain", "box"]
    assert match.hand.seats == (match.captain, match.dealer)  # box vs captain, the box dealing


def test_the_box_player_always_deals():
    box_holders = set()

    def check(_before, _move, after, events):
        for deal in (e for e in events if e.type == "deal"):
            assert after.hand.dealer == after.dealer == deal.public["dealer"]
            assert deal.public["roles"][after.dealer] == "box"
            assert after.hand.non_dealer == after.captain
            box_holders.add(after.dealer)

    for seed in range(1, 6):
        playout("box", seed, on_step=check)
    assert len(box_holders) > 1  # the box changed hands, and each new holder dealt


def test_box_wins_the_box_stays_and_captain_and_sitter_swap():
    match = start("box", non_dealer=LOSER, dealer=KNOCKER, upcard="2d")
    match, _ = play(match, (CAPTAIN, Pass()), (BOX_PLAYER, Draw("discard")), (BOX_PLAYER, Knock(card("Kd"))),
                    (CAPTAIN, LayOff()))
    assert match.last_hand.as_dict()["winner"] == BOX_PLAYER
    assert (match.dealer, match.captain, match.sitter) == (BOX_PLAYER, SITTER, CAPTAIN)
    assert match.hand.seats == (SITTER, BOX_PLAYER)


def test_box_loses_the_box_sits_out_the_captain_goes_into_the_box_and_the_sitter_becomes_captain():
    match = knock_at_once(start("box", non_dealer=KNOCKER, dealer=LOSER, upcard="2d"), "Kd")
    match, _ = play(match, (BOX_PLAYER, LayOff()))
    assert match.last_hand.as_dict()["winner"] == CAPTAIN
    assert (match.dealer, match.captain, match.sitter) == (CAPTAIN, SITTER, BOX_PLAYER)
    assert match.hand.seats == (SITTER, CAPTAIN)


# --- The match and its end -------------------------------------------------------------------------

@pytest.mark.parametrize("target, finished", [(23, True), (24, False)])
def test_the_match_ends_when_a_cumulative_score_reaches_the_target(target, finished):
    match = knock_at_once(start(non_dealer=KNOCKER, dealer=LOSER, upcard="2d", rules={"target_score": target}), "Kd")
    match, events = play(match, (DEALER, LayOff()))
    assert match.scores == (0, 23)
    assert match.is_finished is finished
    if finished:
        assert match.hand is None and events[-1].type == "match_finished" and match.result.as_dict()["winner"] == NON_DEALER
        assert view_for(match, None)["status"] == "finished"
        assert refusal(match, DEALER, Draw("stock")).code == "game_finished"
    else:
        assert match.hand.number == 2 and events[-1].type == "dealt"


def result_row(match, seat):
    return {k: v for k, v in match.result.as_dict()["players"][seat].items() if k != "seat"}


def test_classic_end_bonuses_game_bonus_to_the_winner_line_bonus_per_hand_won_and_totals():
    # Hand 1: seat 1 knocks and scores 23 (below the target 30), so seat 1 deals hand 2.
    match = knock_at_once(start(non_dealer=KNOCKER, dealer=LOSER, upcard="2d", rules={"target_score": 30}), "Kd")
    match, _ = play(match, (DEALER, LayOff()))
    # Hand 2: seat 0 goes gin against D = 24: 20 + 24 = 44.
    match = redeal(match, non_dealer=KNOCKER, dealer="Kc Kh Ks | Qd Jd Td | 2h 5h 8c 9s", upcard="7s")
    match = knock_at_once(match, "Kd")
    match, _ = play(match, (1, LayOff()))
    assert match.result.as_dict()["winner"] == 0 and match.hands_won == (1, 1)
    assert result_row(match, 0) == {"hand_points": 44, "game_bonus": 100, "line_bonus": 20, "shutout_bonus": 0,
                                    "total": 164}
    assert result_row(match, 1) == {"hand_points": 23, "game_bonus": 0, "line_bonus": 20, "shutout_bonus": 0,
                                    "total": 43}


def test_classic_shutout_bonus_when_no_other_player_won_a_hand():
    match = knock_at_once(start(non_dealer=KNOCKER, dealer=LOSER, upcard="2d", rules={"target_score": 20}), "Kd")
    match, _ = play(match, (DEALER, LayOff()))
    assert result_row(match, NON_DEALER) == {"hand_points": 23, "game_bonus": 100, "line_bonus": 20,
                                             "shutout_bonus": 100, "total": 243}
    assert result_row(match, DEALER) == {"hand_points": 0, "game_bonus": 0, "line_bonus": 0, "shutout_bonus": 0,
                                         "total": 0}


@pytest.mark.parametrize("options, bonuses", [
    ({}, {"game_bonus": 0, "line_bonus": 0, "shutout_bonus": 0}),
    ({"game_bonus": 50, "line_bonus": 5, "shutout_bonus": 30},
     {"game_bonus": 50, "line_bonus": 5, "shutout_bonus": 30}),
])
def test_box_has_no_end_bonuses_by_default_but_they_are_options(options, bonuses):
    rules = {"target_score": 20, **options}
    match = knock_at_once(start("box", non_dealer=KNOCKER, dealer=LOSER, upcard="2d", rules=rules), "Kd")
    match, _ = play(match, (BOX_PLAYER, LayOff()))
    assert result_row(match, CAPTAIN) == {"hand_points": 23, **bonuses, "total": 23 + sum(bonuses.values())}
    for seat in (BOX_PLAYER, SITTER):
        assert result_row(match, seat)["total"] == 0


# --- Rule options --------------------------------------------------------------------------------

def test_rule_option_defaults_per_variant():
    common = {"knock_limit": 10, "undercut_bonus": 10, "target_score": 100, "layoff_on_gin": False,
              "dead_hand_stock": 2, "turn_seconds": None}
    assert rules_for("classic").as_dict() == {**common, "gin_bonus": 20, "game_bonus": 100, "line_bonus": 20,
                                              "shutout_bonus": 100}
    assert rules_for("box").as_dict() == {**common, "gin_bonus": 25, "game_bonus": 0, "line_bonus": 0,
                                          "shutout_bonus": 0}
    assert set(RULE_OPTIONS) == set(common) | {"gin_bonus", "game_bonus", "line_bonus", "shutout_bonus"}
    assert rules_for("box", {"gin_bonus": 20}).gin_bonus == 20


@pytest.mark.parametrize("options, name", [
    ({"knock_limt": 10}, "knock_limt"),
    ({"knock_limit": "10"}, "knock_limit"),
    ({"knock_limit": 10.0}, "knock_limit"),
    ({"knock_limit": 11}, "knock_limit"),
    ({"knock_limit": -1}, "knock_limit"),
    ({"gin_bonus": True}, "gin_bonus"),
    ({"target_score": 0}, "target_score"),
    ({"dead_hand_stock": 31}, "dead_hand_stock"),
    ({"layoff_on_gin": 1}, "layoff_on_gin"),
    ({"layoff_on_gin": "false"}, "layoff_on_gin"),
])
@pytest.mark.parametrize("variant", ["classic", "box"])
def test_unknown_options_wrong_types_and_out_of_range_values_are_rejected_by_name(variant, options, name):
    with pytest.raises(InvalidInput) as caught:
        rules_for(variant, options)
    assert caught.value.code == "invalid_rules" and caught.value.field == f"rules.{name}"
    assert name in caught.value.detail


def test_rule_options_are_stored_with_the_match_and_shown_in_every_view():
    rules = rules_for("box", {"knock_limit": 7, "layoff_on_gin": True})
    match, _ = new_match("box", NAMES["box"], rules, seed=4)
    for viewer in (None, 0, 1, 2):
        assert view_for(match, viewer)["rules"] == rules.as_dict()


@pytest.mark.parametrize("variant, names", [("classic", ["ann", "bob", "cyd"]), ("box", ["ann", "bob"])])
def test_a_classic_match_has_two_players_and_a_box_match_three(variant, names):
    with pytest.raises(InvalidInput) as caught:
        new_match(variant, names, rules_for(variant))
    assert (caught.value.code, caught.value.field) == ("invalid_request", "players")


def test_the_variant_is_classic_or_box():
    with pytest.raises(InvalidInput) as caught:
        rules_for("oklahoma")
    assert (caught.value.code, caught.value.field) == ("invalid_request", "variant")
    assert "oklahoma" in caught.value.detail


def test_an_unknown_rule_option_is_named_as_given():
    with pytest.raises(InvalidInput) as caught:
        rules_for("classic", {"oklahoma": True})
    assert (caught.value.code, caught.value.field) == ("invalid_rules", "rules.oklahoma")
    # Unquoted in params, for a client's own message.
    assert caught.value.params["option"] == "oklahoma" and "knock_limit" in caught.value.params["known"]


# --- Who may act ---------------------------------------------------------------------------------

def every_action():
    return [Draw("stock"), Draw("discard"), Pass(), Discard(card("Kd")), Knock(card("Kd")), LayOff()]


def test_only_the_player_to_move_may_act():
    match = start(non_dealer=KNOCKER, dealer=LOSER, upcard="2d")
    positions = [match]
    for move in [(NON_DEALER, Draw("discard")), (NON_DEALER, Discard(card("Kd"))),
                 (DEALER, Draw("stock"))]:
        positions.append(play(positions[-1], move)[0])
    positions.append(knock_at_once(match, "Kd"))
    assert [p.hand.phase for p in positions] == [Phase.UPCARD_OFFER, Phase.DISCARD, Phase.DRAW, Phase.DISCARD,
                                                 Phase.LAYOFF]
    for position in positions:
        waiting = position.hand.other(position.hand.turn)
        for action in every_action():
            assert refusal(position, waiting, action).code == "not_your_turn"


def test_the_sitter_may_not_act_and_seats_outside_the_match_may_not_either():
    match = start("box", non_dealer=KNOCKER, dealer=LOSER, upcard="2d")
    for action in every_action():
        error = refusal(match, SITTER, action)
        assert isinstance(error, Forbidden) and error.code == "forbidden"
        assert refusal(match, 3, action).code == "forbidden"
        assert refusal(match, -1, action).code == "forbidden"


def test_only_the_sitter_may_advise_and_only_the_captain_and_sitter_see_the_advice():
    classic = start(non_dealer=KNOCKER, dealer=LOSER, upcard="2d")
    match = start("box", non_dealer=KNOCKER, dealer=LOSER, upcard="2d")
    for game, seat in [(classic, DEALER), (classic, NON_DEALER), (match, BOX_PLAYER), (match, CAPTAIN)]:
        assert refusal(game, seat, Advise("take it")).code == "forbidden"
    advised, events = apply(match, SITTER, Advise("take the 2d", Draw("discard")))
    assert advised.version == match.version + 1 and advised.hand == match.hand  # advice changes no cards
    assert [e.type for e in events] == ["advice"] and set(events[0].seen_by) == {CAPTAIN, SITTER}
    for viewer in (CAPTAIN, SITTER):
        assert view_for(advised, viewer)["you"]["advice"][0]["message"] == "take the 2d"
        assert redact_event(encode_event(events[0]), viewer)["message"] == "take the 2d"
    for viewer in (BOX_PLAYER, None):
        assert "take the 2d" not in json.dumps(view_for(advised, viewer))
        assert "message" not in redact_event(encode_event(events[0]), viewer)
    # Advice belongs to its hand: the next hand starts without it.
    advised = knock_at_once(advised, "Kd")
    advised, _ = play(advised, (BOX_PLAYER, LayOff()))
    assert view_for(advised, advised.sitter)["you"]["advice"] == []
