"""docs/api.md's walk-throughs as a reader meets them: the quick-play blocks (marked
``<!-- quick-play -->``) and the invite blocks (``<!-- invite -->``) each run in order, as written,
against a fresh ``ginrummy serve``, exactly as the README's walk-through does
(tests/test_readme.py)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.test_readme import (  # noqa: F401 - fresh_service is a fixture
    DOCUMENTED_BASE,
    curl_commands,
    fails_on_http_errors,
    fresh_service,
    marked_blocks,
    run_walkthrough,
)

API_DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"
NEEDS_CURL = pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None,
                                reason="needs curl and bash")


@pytest.mark.parametrize("mark", ["quick-play", "invite"])
def test_each_walkthrough_is_marked_starts_with_base_and_every_request_fails_loudly(mark: str):
    blocks = marked_blocks(mark, "sh", API_DOC)
    assert len(blocks) >= 2, f"docs/api.md has no <!-- {mark} --> blocks"
    assert f"BASE={DOCUMENTED_BASE}\n" in blocks[0], "the first block must set BASE"
    commands = [command for block in blocks for command in curl_commands(block)]
    quiet = [command for command in commands if not fails_on_http_errors(command)]
    assert commands and not quiet, f"curl without -f or a status check: {quiet}"


@pytest.mark.slow
@NEEDS_CURL
def test_the_quick_play_walkthrough_runs_as_written(fresh_service: str, tmp_path: Path):
    out = run_walkthrough(marked_blocks("quick-play", "sh", API_DOC), fresh_service, tmp_path / "quick-play")
    assert re.search(r"^Ann: waiting t_\S+$", out, re.MULTILINE), out
    (game,) = set(re.findall(r"^(?:ann|bob) matched in (g_\S+) seat [01]$", out, re.MULTILINE))
    assert re.search(rf"^ann matched in {game} seat 0$", out, re.MULTILINE), out
    assert re.search(rf"^bob matched in {game} seat 1$", out, re.MULTILINE), out
    assert "Ann holds 10 cards\nBob holds 10 cards" in out
    assert re.search(r'^HTTP 409\n.*"code": "already_queued".*"ticket_id": "t_', out, re.MULTILINE), out
    assert "Cy plays [('Cy', None), ('Bot standard', 'standard')]" in out
    assert "cancel: HTTP 204\nDee: cancelled" in out
    assert re.search(rf'^HTTP 409\n.*"code": "ticket_matched".*"game_id": "{game}"', out, re.MULTILINE), out


@pytest.mark.slow
@NEEDS_CURL
def test_the_invite_walkthrough_runs_as_written(fresh_service: str, tmp_path: Path):
    out = run_walkthrough(marked_blocks("invite", "sh", API_DOC), fresh_service, tmp_path / "invite")
    code = re.search(r"^Ann's code: ([0-9A-HJKMNP-TV-Z]{8})$", out, re.MULTILINE)
    assert code, out
    game = re.search(r"^match (g_\S+) \[\(0, 'Ann', False\), \(1, 'Bob', True\)\]$", out, re.MULTILINE)
    assert game, out
    assert f"accepted by Bob | Ann in seat 0 of {game[1]} | token: True" in out
    assert re.search(r'^HTTP 404\n.*"code": "invite_not_found"', out, re.MULTILINE), out
