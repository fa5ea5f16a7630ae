"""docs/api.md's quick-play walk-through runs as written: its blocks marked ``<!-- quick-play -->``,
in order, as one bash script, in an empty directory, against a fresh ``ginrummy serve`` (the
embedded store, none of this environment's settings), the only change being the port in the
block that sets ``BASE``. Every curl in them fails on an HTTP error or prints its status."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.client.served import running
from tests.test_readme import DOCUMENTED_BASE, FENCE, curl_commands, fails_on_http_errors, service_environment

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
WALKTHROUGH_SECONDS = 120


def walkthrough() -> list[str]:
    return [m["code"] for m in FENCE.finditer(API_DOC.read_text(encoding="utf-8"))
            if m["mark"] == "quick-play" and m["lang"] == "sh"]


def test_the_walkthrough_is_marked_and_every_request_in_it_fails_loudly():
    blocks = walkthrough()
    assert len(blocks) >= 5 and f"BASE={DOCUMENTED_BASE}\n" in blocks[0]
    commands = [command for block in blocks for command in curl_commands(block)]
    assert len(commands) >= 10
    assert not [command for command in commands if not fails_on_http_errors(command)]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None, reason="needs curl and bash")
def test_the_walkthrough_runs_as_written(tmp_path: Path):
    with running(tmp_path) as served:
        script = "\n".join(walkthrough()).replace(f"BASE={DOCUMENTED_BASE}", f"BASE={served.url}", 1)
        workdir = tmp_path / "walkthrough"
        workdir.mkdir()
        (workdir / "walkthrough.sh").write_text("set -euo pipefail\n" + script, encoding="utf-8")
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        result = subprocess.run(["bash", "walkthrough.sh"], cwd=workdir, env=service_environment() | {"PATH": path},
                                capture_output=True, text=True, timeout=WALKTHROUGH_SECONDS)
    assert result.returncode == 0, f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    out = result.stdout
    assert "Ann's ticket: waiting" in out
    assert re.search(r"^Bob's ticket: matched, seat 1 of g_", out, re.MULTILINE), out
    assert "Ann sits in seat 0 against Bob" in out
    assert "first ticket for Cy: 201\nsecond ticket for Cy: 409\nalready_queued names t_" in out
    assert "cancelled: 204" in out
    assert "Cy plays ['Cy', 'standard', 'standard']" in out
    assert re.search(r"^accepted g_\S+ host token: True$", out, re.MULTILINE), out
