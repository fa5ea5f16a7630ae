"""docs/records.md, "Analysis": the strong policy's view of each decision of a person, on scripted
hands drawn as diagrams (missed knocks and gins, a lay-down that leaves too much, undercuts)
and on whole matches (a person who plays as the strong policy agrees with it every time)."""
from __future__ import annotations

import pytest

from service import rules
from service.records import analysis as analysis_module
from service.records.analysis import analyse
from tests.records.support import decks_for, finished, level_policy, scripted_record
from tests.rules.scripted import card, groups, stacked_deck

DEALER, NON_DEALER = 0, 1
CUT = ["Kc", "2d"]  # seat 0 cuts the king: seat 0 deals, seat 1 is the non-dealer
ONE_HAND = {"target_score": 1}  # the first hand scored ends the match
#                takes the upcard 2d, discards Kd: deadwood 2 (2d); with 4c instead: gin
KNOCKER = "4s 5s 6s | 9c 9d 9h | Ac 2c 3c | Kd"
LOW = "Kc Kh Ks | Qd Jd Td | 6h 7h 8h | Ah"  # deadwood 1 (Ah)
LOOSE = "Kc Kh Ks | Qd Jd Td | 7s 2h 5h 8c"  # deadwood 22; 7s lays off on 4s 5s 6s: 15
KNOCKED = rules.Knock(card("Kd"), groups("4s 5s 6s | 9c 9d 9h | Ac 2c 3c"))  # with the upcard 2d: meld 0 is 4s 5s 6s


def record_of(dealer: str, upcard: str, stock: str, moves, levels=None) -> dict:
    deck = stacked_deck(KNOCKER, dealer, upcard, stock)
    return scripted_record("classic", decks_for(CUT, [deck]), moves, levels, ONE_HAND)


def seat(analysis: dict, number: int) -> dict:
    return analysis["seats"][number]


def decisions(analysis: dict, number: int) -> list[dict]:
    return [d for d in analysis["decisions"] if d["seat"] == number]


def test_a_knock_let_pass_is_a_missed_knock():
    record = record_of(LOW, "2d", "5c", [
        (NON_DEALER, rules.Draw("discard")), (NON_DEALER, rules.Discard(card("Kd"))),  # could have knocked
        (DEALER, rules.Draw("stock")), (DEALER, rules.Knock(card("5c"))), (NON_DEALER, rules.LayOff())])
    analysis = analyse(record)
    missed = [d for d in decisions(analysis, NON_DEALER) if d["missed"]]
    assert [(d["step"], d["missed"], d["agreed"]) for d in missed] == [(2, "knock", False)]
    assert missed[0]["strong"] == {"type": "knock", "discard": "Kd"} and missed[0]["played"] == {"type": "discard",
                                                                                                 "card": "Kd"}
    assert seat(analysis, NON_DEALER) | {"agreement": None} == {
        "seat": 1, "name": "P1", "bot": False, "decisions": 3, "agreed": 2, "agreement": None, "knocks_against": 1,
        "deadwood_caught": 2, "undercuts_suffered": 0, "knocks_missed": 1, "gins_missed": 0}
    assert seat(analysis, NON_DEALER)["agreement"] == round(2 / 3, 4)
    assert seat(analysis, DEALER)["knocks_missed"] == 0 and seat(analysis, DEALER)["decisions"] == 2


def test_a_gin_let_pass_by_a_discard_is_a_missed_gin_and_the_knock_that_follows_is_undercut():
    record = record_of(LOW, "4c", "5d", [
        (NON_DEALER, rules.Draw("discard")), (NON_DEALER, rules.Discard(card("Kd"))),  # gin was open
        (DEALER, rules.Draw("stock")), (DEALER, rules.Knock(card("5d"))), (NON_DEALER, rules.LayOff())])
    analysis = analyse(record)
    assert [d["missed"] for d in decisions(analysis, NON_DEALER)] == [None, "gin", None]
    assert seat(analysis, NON_DEALER)["gins_missed"] == 1 and seat(analysis, NON_DEALER)["knocks_missed"] == 0
    assert record["hands"][0]["result"]["outcome"] == "undercut"
    assert seat(analysis, DEALER)["undercuts_suffered"] == 1 and seat(analysis, NON_DEALER)["deadwood_caught"] == 0


def test_a_knock_with_deadwood_when_gin_was_open_is_a_missed_gin():
    melds = groups("4s 5s 6s | 9c 9d 9h | Ac 2c 3c")  # 4c kept out: deadwood 4
    record = record_of(LOW, "4c", "5d", [
        (NON_DEALER, rules.Draw("discard")), (NON_DEALER, rules.Knock(card("Kd"), melds)), (DEALER, rules.LayOff())])
    analysis = analyse(record)
    knock = decisions(analysis, NON_DEALER)[1]
    assert (knock["missed"], knock["agreed"], knock["strong"]["type"]) == ("gin", True, "knock")
    assert seat(analysis, NON_DEALER)["gins_missed"] == 1 and seat(analysis, NON_DEALER)["undercuts_suffered"] == 1


def test_a_lay_down_that_leaves_more_than_the_least_deadwood_disagrees():
    record = record_of(LOOSE, "2d", "", [
        (NON_DEALER, rules.Draw("discard")), (NON_DEALER, KNOCKED),
        (DEALER, rules.LayOff(groups("Kc Kh Ks | Qd Jd Td"), ()))])  # 7s not laid off: 22, not 15
    analysis = analyse(record)
    lay_down = decisions(analysis, DEALER)[-1]
    assert lay_down["phase"] == "layoff" and not lay_down["agreed"] and lay_down["missed"] is None
    assert seat(analysis, DEALER)["deadwood_caught"] == 22
    best = record_of(LOOSE, "2d", "", [
        (NON_DEALER, rules.Draw("discard")), (NON_DEALER, KNOCKED),
        (DEALER, rules.LayOff(groups("Kc Kh Ks | Qd Jd Td"), ((card("7s"), 0),)))])
    assert decisions(analyse(best), DEALER)[-1]["agreed"] and seat(analyse(best), DEALER)["deadwood_caught"] == 15


def test_a_bots_moves_are_not_decisions():
    record = record_of(LOW, "2d", "5c", [
        (NON_DEALER, rules.Draw("discard")), (NON_DEALER, rules.Discard(card("Kd"))),
        (DEALER, "bot"), (DEALER, "bot"), (NON_DEALER, rules.LayOff())], levels=["strong", None])
    analysis = analyse(record)
    assert {d["seat"] for d in analysis["decisions"]} == {NON_DEALER}
    assert seat(analysis, DEALER) | {"knocks_against": 0} == {
        "seat": 0, "name": "P0", "bot": True, "decisions": 0, "agreed": 0, "agreement": None, "knocks_against": 0,
        "deadwood_caught": 0, "undercuts_suffered": 0, "knocks_missed": 0, "gins_missed": 0}


@pytest.mark.parametrize("variant, levels", [("classic", [None, "standard"]), ("box", [None, None, "easy"])])
def test_a_person_who_plays_as_the_strong_policy_agrees_with_it_every_time(variant, levels):
    played = finished(variant, levels, level_policy("strong"), seed=8)
    analysis = played.records.analysis(played.game_id, "a:client")
    people = [p["seat"] for p in analysis["seats"] if not p["bot"]]
    assert analysis["decisions"] and all(d["agreed"] for d in analysis["decisions"])
    for number in people:
        summary = seat(analysis, number)
        assert summary["decisions"] > 10 and summary["agreement"] == 1.0
    # A person who plays otherwise does not: the standard policy waits for gin, takes more from the pile...
    other = finished(variant, levels, level_policy("easy"), seed=8)
    shares = [s["agreement"] for s in other.records.analysis(other.game_id, "a:client")["seats"] if not s["bot"]]
    assert all(share < 1.0 for share in shares)


def test_moves_the_service_played_after_a_missed_deadline_are_not_decisions():
    played = finished("classic", [None, "standard"], level_policy("strong"), rules_={"turn_seconds": 30},
                      timeout_every=4)
    record = played.record()
    analysis = analyse(record)
    timed_out = {a["step"] for hand in record["hands"] for a in hand["actions"] if a["timeout"]}
    assert timed_out and not timed_out & {d["step"] for d in analysis["decisions"]}
    person = [a["step"] for hand in record["hands"] for a in hand["actions"]
              if a["seat"] == 0 and not a["timeout"] and a["type"] in ("draw", "pass", "discard", "knock", "layoff")]
    assert [d["step"] for d in analysis["decisions"]] == person


def test_an_analysis_stops_at_its_bound_and_says_so(monkeypatch):
    played = finished("classic", [None, "standard"], level_policy("standard"), seed=8)
    record = played.record()
    whole = analyse(record)
    assert whole["complete"] and len(whole["decisions"]) > 5
    monkeypatch.setattr(analysis_module, "MAX_DECISIONS", 5)
    bounded = analyse(record)
    assert not bounded["complete"] and bounded["decisions"] == whole["decisions"][:5]
    assert seat(bounded, 0)["decisions"] == 5
    assert seat(bounded, 0)["deadwood_caught"] == seat(whole, 0)["deadwood_caught"]
