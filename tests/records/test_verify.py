"""docs/fairness.md, "Verifying a record": ``ginrummy verify`` accepts every honest record and
refuses each single change to one, naming where it is."""
from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from service.cli import main
from service.records.record import actions_of
from service.records.verify import verify
from tests.records.support import finished, level_policy

CASES = {
    "classic": dict(variant="classic", levels=[None, "strong"], seed=2, client_seed="lucky",
                    rules_={"turn_seconds": 30}, timeout_every=5),
    "box": dict(variant="box", levels=[None, "easy", "standard"], seed=3),
}


def played_case(name: str) -> dict:
    case = dict(CASES[name])
    return finished(case.pop("variant"), case.pop("levels"), level_policy("easy"), **case).record()


@pytest.fixture(scope="module", params=sorted(CASES))
def honest(request) -> dict:
    return played_case(request.param)


@pytest.fixture(scope="module")
def timed() -> dict:
    """The classic case: its turns are timed and some were missed."""
    return played_case("classic")


def test_honest_records_are_accepted(honest):
    assert verify(honest) is None


def step_of(record: dict, kind: str, seat_filter=lambda seat: True) -> dict:
    return next(a for a in actions_of(record) if a["type"] == kind and seat_filter(a["seat"]))


def swap(items: list, i: int, j: int) -> None:
    items[i], items[j] = items[j], items[i]


def other_hex(text: str) -> str:
    return ("1" if text[0] != "1" else "2") + text[1:]


def _draw_card(record):
    action = step_of(record, "draw")
    action["card"] = "As" if action["card"] != "As" else "Ks"


def _discard_card(record):
    action = step_of(record, "discard")
    held = record["hands"][0]["dealt"][str(action["seat"])]
    action["card"] = next(card for card in held if card != action["card"])


def _dealt_card(record):
    hand = record["hands"][0]
    dealt = hand["dealt"][str(hand["dealer"])]
    dealt[0], hand["stock"][-1] = hand["stock"][-1], dealt[0]


def _drop_step(record):
    hand = record["hands"][0]
    del hand["actions"][len(hand["actions"]) // 2]
    for n, action in enumerate(actions_of(record), start=1):
        action["step"] = n
    record["steps"] -= 1


def _extra_step(record):
    last = record["hands"][-1]["actions"]
    last.append({**last[-1], "step": last[-1]["step"] + 1})
    record["steps"] += 1


# (name, change, where the mismatch is named: a prefix of Mismatch.where)
TAMPERINGS = [
    ("a card dealt", _dealt_card, "hands[0].dealt"),
    ("the stock order", lambda r: swap(r["hands"][0]["stock"], 3, 4), "hands[0].stock[3]"),
    ("a later hand's stock", lambda r: swap(r["hands"][-1]["stock"], 0, 30), "hands["),
    ("the upcard", lambda r: swap_upcard(r), "hands[0]"),
    ("the server seed", lambda r: r["fairness"].update(server_seed=other_hex(r["fairness"]["server_seed"])),
     "fairness.commitment"),
    ("the commitment", lambda r: r["fairness"].update(commitment=other_hex(r["fairness"]["commitment"])),
     "fairness.commitment"),
    ("the client seed", lambda r: r["fairness"].update(client_seed=r["fairness"]["client_seed"] + "!"), "cuts[0]"),
    ("a cut card", lambda r: r["cuts"][0]["cards"].reverse(), "cuts[0].cards"),
    ("a card drawn", _draw_card, "hands[0].actions"),
    ("a discard", _discard_card, "hands[0].actions"),
    ("an action's seat", lambda r: step_of(r, "discard").update(seat=(step_of(r, "discard")["seat"] + 1) % 2),
     "hands[0].actions"),
    ("a step dropped", _drop_step, "hands[0]"),
    ("a step added", _extra_step, "hands["),
    ("the step count", lambda r: r.update(steps=r["steps"] + 1), "steps"),
    ("a step's number", lambda r: actions_of(r)[4].update(step=99), "hands[0].actions[4].step"),
    ("a hand's points", lambda r: r["hands"][0]["result"].update(points=r["hands"][0]["result"]["points"] + 1),
     "hands[0].result"),
    ("a hand's dealer", lambda r: r["hands"][-1].update(dealer=r["hands"][-1]["non_dealer"],
                                                         non_dealer=r["hands"][-1]["dealer"]), "hands["),
    ("the winner", lambda r: r["result"].update(winner=1 - r["result"]["winner"]), "result"),
    ("a total", lambda r: r["result"]["players"][0].update(total=r["result"]["players"][0]["total"] + 20), "result"),
    ("a knock's melds", lambda r: step_of(r, "knock")["melds"].pop(), "hands["),
    ("a bot's move called a person's", lambda r: step_of(r, "draw", lambda seat: seat == 2 or seat == 1).update(
        bot=False), "hands[0].actions"),
    ("a person's move called a bot's", lambda r: step_of(r, "discard", lambda seat: seat == 0).update(bot=True),
     "hands["),
    ("the format", lambda r: r.update(format="ginrummy-record/2"), "format"),
    ("no fairness", lambda r: r.update(fairness=None), "fairness"),
]


def swap_upcard(record: dict) -> None:
    hand = record["hands"][0]
    hand["upcard"], hand["stock"][0] = hand["stock"][0], hand["upcard"]


@pytest.mark.parametrize("name, change, where", TAMPERINGS, ids=[t[0] for t in TAMPERINGS])
def test_each_single_change_is_refused_and_named(honest, name, change, where):
    record = copy.deepcopy(honest)
    change(record)
    assert record != honest
    mismatch = verify(record)
    assert mismatch is not None, name
    assert mismatch.where.startswith(where), (name, str(mismatch))


def test_a_timeout_moved_or_left_out_is_refused(timed):
    assert verify(timed) is None and any(a["type"] == "timeout" for a in actions_of(timed))
    record = copy.deepcopy(timed)
    next(a for a in actions_of(record) if a["type"] == "timeout")["deadline"] = "2030-01-01T00:00:00Z"
    assert "deadline" in str(verify(record))
    record = copy.deepcopy(timed)
    hand = next(hand for hand in record["hands"] if any(a["type"] == "timeout" for a in hand["actions"]))
    hand["actions"] = [a for a in hand["actions"] if a["type"] != "timeout"]  # the service's moves stay
    for n, action in enumerate(actions_of(record), start=1):
        action["step"] = n
    record["steps"] = n
    assert ".timeout" in verify(record).where
    record = copy.deepcopy(timed)
    next(a for a in actions_of(record) if a["timeout"] and a["type"] != "timeout")["timeout"] = False
    assert ".timeout" in verify(record).where


@pytest.mark.parametrize("junk", [None, [], "text", {"format": "ginrummy-record/1"},
                                  {"format": "ginrummy-record/1", "fairness": {"server_seed": 5}}])
def test_what_is_no_record_is_refused_not_crashed_on(junk):
    assert verify(junk) is not None



# The match itself (its variant, seats and rule options) as the record states it: a record whose
# players do not fit its variant, or whose rule options are out of range, is refused and named;
# it must not crash verify (a traceback, exit 1 by accident) nor pass as honest.
MATCH_CHANGES = [
    ("the variant", lambda r: r.update(variant="box" if r["variant"] == "classic" else "classic"), ("players", "cuts")),
    ("a rule option out of range", lambda r: r["rules"].update(knock_limit=999), ("rules.knock_limit",)),
    ("a rule option of the wrong type", lambda r: r["rules"].update(layoff_on_gin=3), ("rules.layoff_on_gin",)),
]


@pytest.mark.parametrize("name, change, where", MATCH_CHANGES, ids=[t[0] for t in MATCH_CHANGES])
def test_a_match_the_rules_could_not_have_created_is_refused_and_named(honest, name, change, where):
    record = copy.deepcopy(honest)
    change(record)
    mismatch = verify(record)
    assert mismatch is not None, name
    assert mismatch.where.startswith(where), (name, str(mismatch))

def test_the_command_exits_0_1_or_2(honest, tmp_path, capsys):
    path = tmp_path / "record.json"
    path.write_text(json.dumps(honest), encoding="utf-8")
    assert main(["verify", str(path)]) == 0
    assert "is honest" in capsys.readouterr().out
    tampered = copy.deepcopy(honest)
    swap(tampered["hands"][0]["stock"], 0, 1)
    path.write_text(json.dumps(tampered), encoding="utf-8")
    assert main(["verify", str(path)]) == 1
    assert "MISMATCH at hands[0].stock[0]" in capsys.readouterr().err
    path.write_text("{not json", encoding="utf-8")
    assert main(["verify", str(path)]) == 2
    assert main(["verify", str(tmp_path / "missing.json")]) == 2


def test_the_installed_command_reads_standard_input(honest):
    command = [sys.executable, "-m", "service.cli", "verify", "-"]
    done = subprocess.run(command, input=json.dumps(honest), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    tampered = copy.deepcopy(honest)
    tampered["fairness"]["client_seed"] += "x"
    done = subprocess.run(command, input=json.dumps(tampered), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "MISMATCH at cuts[0]" in done.stderr
