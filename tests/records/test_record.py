"""docs/records.md: the record of a finished match is complete (it replays to every view the
players saw and to the stored match itself), fits its JSON Schema, reads back from its text
notation, and is refused rather than answered in part."""
from __future__ import annotations

import random

import pytest
from jsonschema import Draft202012Validator

from service import rules
from service.games import Retry
from service.games.errors import Unprocessable
from service.records import replay, text
from service.records.checkpoints import CHECKPOINT, Replayed
from service.records.record import RecordIncomplete, actions_of, build_record, epoch_ms, iso_ms
from service.records.service import RecordNotKept
from service.rules.deals import deal_label, derive_deck
from service.store.memory import MemoryStore
from tests.records.support import finished, level_policy, schema, start

VARIANTS = {"classic": [None, "strong"], "box": [None, None, "standard"]}
SERVICE_ONLY = ("id", "metadata", "rematch_id", "rated")
SERVICE_ONLY_OF_PLAYERS = ("external_id", "metadata", "rating", "online")


@pytest.fixture(scope="module", params=["classic", "box"])
def played(request):
    # Turns timed and missed now and then: timeouts and deadlines are in the record too.
    return finished(request.param, VARIANTS[request.param], level_policy("easy"), client_seed="tests ✓",
                    rules_={"turn_seconds": 30}, timeout_every=7)


def engine_view(view: dict) -> dict:
    """A view as the engine alone builds it (without what the service adds)."""
    shown = {key: value for key, value in view.items() if key not in SERVICE_ONLY}
    shown["players"] = [{k: v for k, v in p.items() if k not in SERVICE_ONLY_OF_PLAYERS} for p in view["players"]]
    if shown["result"] is not None:
        shown["result"] = {k: v for k, v in shown["result"].items() if k != "rating_changes"}
    return shown


def test_the_record_fits_its_json_schema(played):
    record = played.record()
    Draft202012Validator.check_schema(schema())
    assert list(Draft202012Validator(schema()).iter_errors(record)) == []
    broken = {**record, "hands": [{**record["hands"][0], "upcard": "10d"}]}
    assert list(Draft202012Validator(schema()).iter_errors(broken))


@pytest.mark.parametrize("seed", ["", "0F1E" * 16, "0f1e" * 15, "0f1e" * 17, "zz" * 32])
def test_the_schema_takes_only_a_server_seed_of_64_lowercase_hex(played, seed):
    """docs/fairness.md: the server seed is 64 lowercase hex characters, as its commitment is."""
    record = played.record()
    assert len(record["fairness"]["server_seed"]) == 64
    broken = {**record, "fairness": {**record["fairness"], "server_seed": seed}}
    assert list(Draft202012Validator(schema()).iter_errors(broken))


def test_every_deck_is_whole_and_the_one_the_seeds_give(played):
    record = played.record()
    fairness = record["fairness"]
    assert fairness["client_seed"] == "tests ✓" and fairness["commitment"] == played.games.view(
        played.game_id, None).body["fairness"]["commitment"]
    for hand in record["hands"]:
        dealt = hand["dealt"][str(hand["non_dealer"])] + hand["dealt"][str(hand["dealer"])]
        cards = dealt + [hand["upcard"]] + hand["stock"]
        assert sorted(cards) == sorted(str(card) for card in rules.CARDS)
        deck = [str(c) for c in derive_deck(fairness["server_seed"], fairness["client_seed"], deal_label(hand["number"]))]
        assert hand["dealt"][str(hand["non_dealer"])] == deck[0:20:2] and hand["stock"] == deck[21:]


def test_the_steps_are_every_action_in_order_with_times_and_flags(played):
    record = played.record()
    actions = actions_of(record)
    assert [a["step"] for a in actions] == list(range(1, record["steps"] + 1))
    times = [epoch_ms(a["time"]) for a in actions]
    assert times == sorted(times) and times[0] >= epoch_ms(record["created_at"])
    kinds = {a["type"] for a in actions}
    assert {"draw", "discard", "knock", "layoff", "timeout"} <= kinds
    bots = {p["seat"] for p in record["players"] if p["bot"]}
    assert all(a["bot"] for a in actions if a["seat"] in bots)
    timeouts = [n for n, a in enumerate(actions) if a["type"] == "timeout"]
    for n in timeouts:  # the service's moves for the seat follow, flagged, until its turn ends
        seat = actions[n]["seat"]
        assert actions[n]["timeout"] and actions[n + 1]["seat"] == seat and actions[n + 1]["timeout"]
        assert actions[n + 1]["bot"]
    assert all(not a["timeout"] for a in actions if not a["bot"] and a["type"] != "timeout")


def test_the_replay_reproduces_every_view_the_players_saw_and_the_stored_match(played):
    record = played.record()
    positions = list(replay.positions(record))
    by_version = {position.match.version: position.match for position in positions}
    for viewer, view in played.views:
        replayed = by_version[view["version"]]
        assert rules.view_for(replayed, viewer) == engine_view(view), (viewer, view["version"])
    final = positions[-1].match
    stored = played.match()
    assert rules.encode(final) == rules.encode(stored)
    assert final.result.as_dict() == record["result"]


def test_the_text_notation_reads_back_into_the_same_record(played):
    record = played.record()
    written = text.to_text(record)
    assert text.parse(written) == record
    assert text.to_text(text.parse(written)) == written
    lines = written.splitlines()
    assert len([line for line in lines if line[:1].isdigit()]) == record["steps"]


@pytest.mark.parametrize("change, line", [
    (lambda lines: lines[:1] + ["nonsense"] + lines[1:], 2),
    (lambda lines: [line + " Kd" if line[:2] == "1 " else line for line in lines], None),  # a card too many
    (lambda lines: [l for n, l in enumerate(lines) if not (l[:1].isdigit() and l.split(" ")[0] == "3")], None),
    (lambda lines: lines + ["extra"], None),
    (lambda lines: [line.replace("dealt", "delt", 1) for line in lines], None),
])
def test_text_that_is_not_a_record_is_refused_naming_its_line(played, change, line):
    lines = change(text.to_text(played.record()).splitlines())
    with pytest.raises(text.TextError) as refused:
        text.parse("\n".join(lines) + "\n")
    assert refused.value.line >= 1 and (line is None or refused.value.line == line)


def test_times_read_and_write_to_the_millisecond():
    assert iso_ms(1_900_000_000_004) == "2030-03-17T17:46:40.004Z"
    assert epoch_ms(iso_ms(1_900_000_000_004)) == 1_900_000_000_004
    with pytest.raises(ValueError):
        epoch_ms("2030-03-17T17:46:40Z")


def test_a_match_being_played_has_no_record_yet():
    playing = start("classic", [None, "standard"])
    for call in (lambda: playing.records.record(playing.game_id), lambda: playing.records.text(playing.game_id),
                 lambda: playing.records.replay(playing.game_id, 0),
                 lambda: playing.records.analysis(playing.game_id, "a:client")):
        with pytest.raises(rules.IllegalMove) as refused:
            call()
        assert refused.value.code == "game_not_finished"


def test_a_match_whose_oldest_events_were_dropped_has_no_record():
    # The store keeps 100 events; a whole match has several hundred.
    played = finished("classic", [None, "standard"], store=MemoryStore(max_events=100))
    with pytest.raises(RecordNotKept) as refused:
        played.record()
    assert refused.value.code == "record_incomplete" and refused.value.params["first_kept"] > 1
    with pytest.raises(RecordNotKept):
        played.records.analysis(played.game_id, "a:client")
    events = [rules.decode_event(e) for e in played.store.events(played.game_id, 0)]
    with pytest.raises(RecordIncomplete):
        build_record(played.game_id, played.match(), 0, events)


def test_an_aborted_or_resigned_match_has_a_record_that_replays():
    played = start("classic", [None, None], client_seed="x")
    played.games.act(played.game_id, played.tokens[played.match().turn], rules.Pass(), Retry())
    played.games.abort(played.game_id, played.stored().owner)
    record = played.record()
    assert [a["type"] for a in actions_of(record)] == ["pass", "abort"] and record["result"]["status"] == "aborted"
    assert actions_of(record)[-1]["seat"] is None and record["hands"][0]["result"] is None
    assert list(replay.positions(record))[-1].match.result.as_dict() == record["result"]
    resigned = start("box", [None, None, None])
    resigned.games.act(resigned.game_id, resigned.tokens[1], rules.Resign(), Retry())
    record = resigned.record()
    assert actions_of(record)[-1] | {"time": None} == {"step": 1, "seat": 1, "type": "resign", "time": None,
                                                       "bot": False, "timeout": False}


def test_replay_steps_are_zero_to_the_last(played):
    record = played.record()
    first = played.records.replay(played.game_id, 0)
    assert first["action"] is None and first["game"]["hand"]["number"] == 1 and len(first["stock"]) == 31
    last = played.records.replay(played.game_id, record["steps"])
    assert last["game"]["status"] == "finished" and last["stock"] == [] and last["action"] == actions_of(record)[-1]
    for step in random.Random(3).sample(range(1, record["steps"]), 20):
        shown = played.records.replay(played.game_id, step)
        if shown["game"]["hand"] is not None:  # every card is somewhere, and only once
            places = [card for seat in shown["seats"] for card in seat["hand"]] + shown["stock"] + shown["game"][
                "hand"]["discard_pile"]
            assert sorted(places) == sorted(str(card) for card in rules.CARDS), step
    for step in (-1, record["steps"] + 1):
        with pytest.raises(Unprocessable) as refused:
            played.records.replay(played.game_id, step)
        assert refused.value.code == "step_out_of_range" and refused.value.params == {"steps": record["steps"]}


def test_a_replay_steps_from_its_nearest_checkpoint_to_the_same_positions(played):
    record = played.record()
    replayed = Replayed.of(record)
    assert [p.step for p in replayed.checkpoints] == list(range(0, record["steps"] + 1, CHECKPOINT))
    everything = list(replay.positions(record))
    for step in (0, 1, CHECKPOINT - 1, CHECKPOINT, CHECKPOINT + 5, record["steps"]):
        position = replayed.position(step)
        assert position.step == step and rules.encode(position.match) == rules.encode(everything[step].match)
        assert position.action == everything[step].action
    again = played.records.replay(played.game_id, record["steps"] - 1)  # from the kept replay
    assert again == played.records.replay(played.game_id, record["steps"] - 1)
