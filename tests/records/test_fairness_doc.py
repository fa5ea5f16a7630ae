"""docs/fairness.md against the code: its worked example, line by line, and its reference
implementation (JavaScript, run with Node.js when it is installed) against the engine."""
from __future__ import annotations

import hashlib
import hmac
import json
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from service.rules import CARDS, cards_of, new_match, rules_for
from service.rules.deals import byte_stream, derive_deck

DOC = Path(__file__).resolve().parents[2] / "docs" / "fairness.md"
BLOCK = re.compile(r"<!-- (?P<mark>[a-z-]+) -->\n```\w+\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


def block(mark: str) -> str:
    return next(m["body"] for m in BLOCK.finditer(DOC.read_text(encoding="utf-8")) if m["mark"] == mark)


def example() -> tuple[dict[str, str], list[str]]:
    """The worked example's ``name: value`` lines, and its lines of shuffle steps."""
    shown, steps = {}, []
    for line in block("worked-example").splitlines():
        if " step " in line:
            steps.append(line)
        elif line:
            name, value = line.split(": ", 1)
            shown[name] = value
    return shown, steps


def trace(server: str, client: str, label: str, steps: int) -> list[str]:
    """The Fisher-Yates steps of a shuffle, written as the doc writes them."""
    deck = [str(card) for card in CARDS]
    stream = byte_stream(server, client, label)
    written, position = [], 0
    for i in range(51, 51 - steps, -1):
        n = i + 1
        limit = 256 - 256 % n
        while True:
            byte = next(stream)
            position += 1
            if byte < limit:
                break
            written.append(f"{label} step i={i}: byte {position - 1} = {byte}, not below {limit}: rejected")
        j = byte % n
        written.append(f"{label} step i={i}: byte {position - 1} = {byte}, below {limit}: j = {byte} mod {n} = {j}, "
                       f"swap {deck[i]} and {deck[j]}")
        deck[i], deck[j] = deck[j], deck[i]
    return written


def test_the_worked_example_is_what_the_code_computes():
    shown, steps = example()
    server, client = shown["server_seed"], shown["client_seed"]
    assert shown["commitment"] == hashlib.sha256(server.encode()).hexdigest()
    labels = sorted({key.split(" ")[0] for key in shown if key.startswith(("cut:", "deal:"))})
    assert labels == ["cut:1", "cut:2", "deal:1"]
    for label in labels:
        message = f"{client}:{label}:0"
        assert shown[f"{label} message of block 0"] == message
        assert shown[f"{label} block 0"] == hmac.new(server.encode(), message.encode(), hashlib.sha256).hexdigest()
        assert shown[f"{label} deck"].split() == [str(card) for card in derive_deck(server, client, label)]
    assert steps == trace(server, client, "cut:1", 5)
    match, events = new_match("classic", ["a", "b"], rules_for("classic"), server_seed=server, client_seed=client)
    cuts = [event.public for event in events if event.type == "cut"]
    assert [cut["cards"] for cut in cuts] == [["Jc", "Js"], ["4c", "2c"]] and [c["decided"] for c in cuts] == [False, True]
    assert shown["cut:1 cards"].startswith("seat 0 Jc, seat 1 Js: equal ranks")
    assert shown["cut:2 cards"] == "seat 0 4c, seat 1 2c: seat 0 deals hand 1, seat 1 is the non-dealer"
    hand = match.hand
    assert (hand.dealer, hand.non_dealer) == (0, 1)
    deck = derive_deck(server, client, "deal:1")
    assert shown["hand 1 non-dealer (seat 1)"].split() == [str(c) for c in deck[0:20:2]]
    assert set(shown["hand 1 non-dealer (seat 1)"].split()) == {str(c) for c in cards_of(hand.holding(1))}
    assert set(shown["hand 1 dealer (seat 0)"].split()) == {str(c) for c in cards_of(hand.holding(0))}
    assert shown["hand 1 upcard"] == str(hand.pile[-1])
    assert shown["hand 1 stock, drawn first to last"].split() == [str(c) for c in reversed(hand.stock)]


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_the_reference_implementation_derives_the_engines_decks(tmp_path):
    script = tmp_path / "deals.js"
    script.write_text(block("reference-javascript"), encoding="utf-8")
    rng = random.Random(11)
    cases = [("0f" * 32, "", "cut:1"), ("ab" * 32, "ünïcödé 🂡 seed", "deal:7"), ("x", "a:b:c", "deal:12")]
    cases += [(rng.randbytes(32).hex(), rng.choice(["", "lucky", "my lucky seed 5"]), f"deal:{rng.randint(1, 30)}")
              for _ in range(20)]
    program = ("const {deriveDeck, deal} = require(%s); const cases = %s;"
               "console.log(JSON.stringify(cases.map(([s, c, l]) => [deriveDeck(s, c, l), deal(deriveDeck(s, c, l))])));"
               % (json.dumps(str(script)), json.dumps(cases)))
    done = subprocess.run(["node", "-e", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    for (server, client, label), (deck, dealt) in zip(cases, json.loads(done.stdout)):
        expected = [str(card) for card in derive_deck(server, client, label)]
        assert deck == expected, (server, client, label)
        assert dealt == {"nonDealer": expected[0:20:2], "dealer": expected[1:20:2], "upcard": expected[20],
                         "stock": expected[21:]}
