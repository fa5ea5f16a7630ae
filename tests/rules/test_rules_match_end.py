"""Ending a match early (resign, abort) and timed turns (turn_seconds), as docs/rules.md says:
a resignation ends the match at once with the totals as they stand and no bonuses; an abort
ends it with no winner; a person who lets a turn's deadline pass has that turn played for them."""
from __future__ import annotations

from dataclasses import replace

import pytest

from service.rules import (Draw, IllegalMove, InvalidInput, Pass, Resign, Status, abort, apply, is_due,
                           new_match, resign, rules_for, time_out, view_for)
from tests.rules.scripted import NAMES

T0 = 1_000_000.0


def classic(**rules):
    return new_match("classic", NAMES["classic"], rules_for("classic", rules), seed=11, now=T0)[0]


def test_resigning_ends_the_match_at_once_with_totals_as_they_stand_and_no_bonuses():
    match = replace(classic(), scores=(40, 55), hands_won=(2, 3))
    seat = match.turn
    ended, events = apply(match, seat, Resign())
    result = ended.result
    assert ended.status is Status.FINISHED and ended.hand is None and result.forfeit == seat
    assert result.winner == 1 - seat
    assert [(line.hand_points, line.total) for line in result.players] == [(40, 40), (55, 55)]
    assert [e.type.value for e in events] == ["resign", "match_finished"] and events[-1].turn is None


def test_a_player_may_resign_when_it_is_not_their_turn():
    match = classic()
    waiting = 1 - match.turn
    assert apply(match, waiting, Resign())[0].result.forfeit == waiting


@pytest.mark.parametrize(("scores", "won", "winner"), [
    ((10, 60, 30), (1, 2, 1), 1),
    ((10, 30, 30), (1, 1, 2), 2),  # equal totals: more hands won
    ((10, 30, 30), (1, 2, 2), 1),  # and then the lower seat
])
def test_in_box_the_remaining_player_with_the_highest_total_wins_a_resignation(scores, won, winner):
    match = new_match("box", NAMES["box"], rules_for("box"), seed=4)[0]
    match = replace(match, scores=scores, hands_won=won)
    assert resign(match, 0)[0].result.winner == winner


def test_an_abort_ends_the_match_with_no_winner():
    match = replace(classic(), scores=(12, 0), hands_won=(1, 0))
    ended, events = abort(match)
    assert ended.status is Status.ABORTED and ended.result.winner is None and ended.result.forfeit is None
    assert view_for(ended, None)["status"] == "aborted"
    assert [e.type.value for e in events] == ["abort", "match_finished"]
    with pytest.raises(IllegalMove) as refused:
        abort(ended)
    assert refused.value.code == "game_finished"


def test_nothing_but_reads_after_the_match_is_over():
    ended = resign(classic(), 0)[0]
    for seat, action in ((0, Pass()), (1, Resign()), (1, Draw("stock"))):
        with pytest.raises(IllegalMove) as refused:
            apply(ended, seat, action)
        assert refused.value.code == "game_finished"


@pytest.mark.parametrize("seconds", [9, 86401, 0, "60", 60.0, True])
def test_turn_seconds_is_off_by_default_and_else_ten_seconds_to_a_day(seconds):
    assert rules_for("classic").turn_seconds is None
    assert rules_for("box", {"turn_seconds": 10}).turn_seconds == 10
    assert rules_for("box", {"turn_seconds": 86400}).turn_seconds == 86400
    with pytest.raises(InvalidInput) as refused:
        rules_for("classic", {"turn_seconds": seconds})
    assert refused.value.code == "invalid_rules" and refused.value.field == "rules.turn_seconds"


def test_each_turn_gets_its_own_deadline_and_a_draw_and_discard_share_one():
    match = classic(turn_seconds=60)
    assert match.hand.deadline == T0 + 60
    first = match.turn
    match, _ = apply(match, first, Pass(), now=T0 + 5)
    assert match.turn != first and match.hand.deadline == T0 + 5 + 60
    second = match.turn
    match, _ = apply(match, second, Pass(), now=T0 + 9)
    assert match.hand.deadline == T0 + 9 + 60
    match, _ = apply(match, first, Draw("stock"), now=T0 + 20)
    assert match.turn == first and match.hand.deadline == T0 + 9 + 60  # the same turn goes on


def test_a_missed_deadline_is_due_and_recorded_as_a_timeout_of_that_seat():
    match = classic(turn_seconds=60)
    seat = match.turn
    assert not is_due(match, T0 + 59) and is_due(match, T0 + 60)
    with pytest.raises(IllegalMove):
        time_out(match, T0 + 59)
    timed_out, events = time_out(match, T0 + 61)
    assert timed_out.timeouts[seat] == 1 and timed_out.version == match.version + 1
    assert [(e.type.value, e.seat, e.public["timeouts"]) for e in events] == [("timeout", seat, 1)]
    assert view_for(timed_out, None)["players"][seat]["timeouts"] == 1


def test_untimed_matches_and_bots_never_time_out():
    assert not is_due(classic(), T0 + 10**9)
    timed = new_match("classic", NAMES["classic"], rules_for("classic", {"turn_seconds": 10}), seed=11, now=T0,
                      bots=["standard", "standard"])[0]
    assert timed.is_bot(timed.turn) and not is_due(timed, T0 + 10**6)


def test_the_view_shows_the_deadline_in_utc():
    view = view_for(classic(turn_seconds=60), None)
    assert view["hand"]["deadline"] == "1970-01-12T13:47:40Z" and view["rules"]["turn_seconds"] == 60
    assert view_for(classic(), None)["hand"]["deadline"] is None
