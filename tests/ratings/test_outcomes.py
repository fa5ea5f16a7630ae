"""service/ratings/outcomes.py: what a finished match counts as, per seat (docs/ratings.md)."""
from __future__ import annotations

import pytest

from service import rules
from service.ratings.outcomes import SeatGame, pairwise_games


def test_classic_the_winner_scores_one_and_the_loser_zero():
    assert pairwise_games("classic", 1, None, [38, 237]) == {0: [SeatGame(1, 0.0)], 1: [SeatGame(0, 1.0)]}


def test_classic_the_match_winner_counts_not_the_totals():
    """Line bonuses can leave the loser with the higher total; the match still went to the winner."""
    assert pairwise_games("classic", 0, None, [150, 160]) == {0: [SeatGame(1, 1.0)], 1: [SeatGame(0, 0.0)]}


def test_classic_a_resignation_is_a_loss_whatever_the_score():
    """Seat 0 led 90 to 10 and resigned: it lost."""
    assert pairwise_games("classic", 1, 0, [90, 10]) == {0: [SeatGame(1, 0.0)], 1: [SeatGame(0, 1.0)]}


def test_box_every_pair_is_one_game_by_final_totals():
    """Totals 104, 61, 61: seat 0 beats both; seats 1 and 2 draw."""
    assert pairwise_games("box", 0, None, [104, 61, 61]) == {
        0: [SeatGame(1, 1.0), SeatGame(2, 1.0)],
        1: [SeatGame(0, 0.0), SeatGame(2, 0.5)],
        2: [SeatGame(0, 0.0), SeatGame(1, 0.5)],
    }


def test_box_a_resignation_loses_to_both_others_who_still_meet_by_totals():
    """Seat 2 led with 80 and resigned; seats 0 (40) and 1 (55) meet by their totals."""
    assert pairwise_games("box", 1, 2, [40, 55, 80]) == {
        0: [SeatGame(1, 0.0), SeatGame(2, 1.0)],
        1: [SeatGame(0, 1.0), SeatGame(2, 1.0)],
        2: [SeatGame(0, 0.0), SeatGame(1, 0.0)],
    }


def test_box_a_resignation_with_the_others_level_is_a_draw_between_them():
    assert pairwise_games("box", 0, 1, [20, 0, 20])[0] == [SeatGame(1, 1.0), SeatGame(2, 0.5)]


@pytest.mark.parametrize("variant, totals", [("classic", [30, 60]), ("box", [30, 60, 90])])
def test_an_aborted_match_counts_for_nothing(variant, totals):
    assert pairwise_games(variant, None, None, totals) == {}


@pytest.mark.parametrize("variant, winner, forfeit, totals", [
    ("poker", 0, None, [1, 2]),
    ("classic", 0, None, [1, 2, 3]),
    ("box", 0, None, [1, 2]),
    ("classic", 2, None, [1, 2]),
    ("box", 0, 3, [1, 2, 3]),
    ("classic", 0, 0, [1, 2]),
])
def test_inconsistent_results_are_refused(variant, winner, forfeit, totals):
    with pytest.raises(ValueError):
        pairwise_games(variant, winner, forfeit, totals)


def _result_of(variant: str, finish) -> rules.MatchResult:
    names = ["a", "b"] if variant == "classic" else ["a", "b", "c"]
    match, _ = rules.new_match(variant, names, rules.rules_for(variant), seed="outcomes")
    return finish(match)[0].result


@pytest.mark.parametrize("variant", ["classic", "box"])
def test_an_engine_result_feeds_it_directly(variant):
    """What the use case has at hand: the engine's MatchResult of a resignation and of an abort."""
    resigned = _result_of(variant, lambda match: rules.apply(match, 1, rules.Resign()))
    games = pairwise_games(variant, resigned.winner, resigned.forfeit, [line.total for line in resigned.players])
    assert all(score == 0.0 for _, score in games[1]) and len(games[1]) == len(resigned.players) - 1
    aborted = _result_of(variant, rules.abort)
    assert pairwise_games(variant, aborted.winner, aborted.forfeit, [line.total for line in aborted.players]) == {}
