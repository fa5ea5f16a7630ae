"""A hint (what the service shows a player, and what a bot sitter advises) is the standard
policy's choice, legal now, with a one-line English reason and a stable code and params that
a client can translate: snake_case, JSON, and card params in wire notation."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from service import bots
from service.rules import InvalidInput, apply, parse_card

from .positions import VARIANTS, is_legal, positions

# docs/api.md ("Hint") lists every reason code with its params, so that a client's
# translations can be complete: a code the policies give must be in that table.
API_DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def documented_reason_codes() -> set[str]:
    section = API_DOCS.read_text().split("\n### Hint\n", 1)[1].split("\n### ", 1)[0]
    rows = section.split("|---|", 1)[1]  # below the table's header
    return set(re.findall(r"^\| `([a-z0-9_]+)` \|", rows, re.MULTILINE))


KNOWN_REASON_CODES = documented_reason_codes()
SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
CARD_KEY = re.compile(r"(.+_)?(card|cards|discard|upcard|layoffs)")


def card_params(params: dict):
    """Every value in ``params`` (nested ones included) whose key says it is a card or cards."""
    for key, value in params.items():
        if isinstance(value, dict):
            yield from card_params(value)
        elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            for item in value:
                yield from card_params(item)
        elif CARD_KEY.fullmatch(key):
            yield from (value if isinstance(value, list) else [value])


def is_card(text) -> bool:
    try:
        return isinstance(text, str) and str(parse_card(text)) == text
    except InvalidInput:
        return False


def test_the_card_params_checker_finds_cards_and_refuses_what_is_not_one():
    params = {"card": "Kd", "deadwood": 7, "layoffs": [{"card": "7s", "meld": 0}], "their_cards": ["Ac", "10d"]}
    assert list(card_params(params)) == ["Kd", "7s", "Ac", "10d"]
    assert [is_card(text) for text in card_params(params)] == [True, True, True, False]
    assert not is_card("kd") and not is_card(None)


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_hint_is_the_standard_choice_legal_and_explained_in_a_translatable_form(variant):
    codes = Counter()
    for position in positions(variant, range(100, 104), keep=0.1):
        obs = position.obs
        hint = bots.hint(obs)
        where = f"{position.label}: {hint}"
        assert hint.action == bots.choose(bots.Level.STANDARD, obs), where
        assert is_legal(obs, hint.action), where
        apply(position.match, position.seat, hint.action)  # raises if the engine refuses it
        assert isinstance(hint.reason, str) and hint.reason.strip() and len(hint.reason.splitlines()) == 1, where
        assert SNAKE_CASE.fullmatch(hint.reason_code), where
        assert hint.reason_code in KNOWN_REASON_CODES, f"{where}: document the code in docs/api.md"
        assert isinstance(hint.params, dict) and json.loads(json.dumps(hint.params)) == hint.params, where
        assert all(is_card(text) for text in card_params(hint.params)), where
        codes[hint.reason_code] += 1
    assert len(codes) >= 3, codes  # hints tell situations apart
