"""The README as a user meets it: its walk-through runs as written, its receiver verifies
real signatures, and its settings table lists every setting the code reads.

The walk-through is the README's ``sh`` blocks marked with ``<!-- walkthrough -->`` on the
line before the fence. They are run in order, as one bash script (``set -euo pipefail``),
in an empty directory, against a fresh ``ginrummy serve`` (embedded store, no settings from
this environment) on a free loopback port: the only change is the port in the block that
sets ``BASE``. Every curl in them must fail on an HTTP error (``-f``) or check the status it
got, so a refused request fails the test.
"""
from __future__ import annotations

import http.client
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import fields
from http.server import HTTPServer
from pathlib import Path

import pytest

from service.config import Config
from service.webhook_signing import WebhookSecret
from tests.client.served import running

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCUMENTED_BASE = "http://127.0.0.1:8000"
# The walk-through plays one hand against a bot and long-polls once for 2 s; on a loaded
# two-core machine that stays well under this.
WALKTHROUGH_SECONDS = 240

FENCE = re.compile(r"^<!-- (?P<mark>[a-z-]+) -->\n```(?P<lang>\w+)\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)


def marked_blocks(mark: str, lang: str, document: Path = README) -> list[str]:
    """The code blocks of ``lang`` preceded by ``<!-- mark -->`` in ``document``, in order."""
    return [m["code"] for m in FENCE.finditer(document.read_text(encoding="utf-8"))
            if m["mark"] == mark and m["lang"] == lang]


def curl_commands(script: str) -> list[str]:
    """Each curl command of ``script``, continuation lines joined."""
    joined = script.replace("\\\n", " ")
    return [match.group(0) for match in re.finditer(r"\bcurl\b[^\n|>;]*", joined)]


def fails_on_http_errors(command: str) -> bool:
    """Whether a curl command exits non-zero on an HTTP error, or writes the status to check it."""
    short_flags = "".join(re.findall(r"\s-([a-zA-Z]+)", command))
    return "f" in short_flags or "--fail" in command or "%{http_code}" in command


def service_environment() -> dict[str, str]:
    """This process's environment without any of the service's settings: a fresh default
    service (the embedded store), whatever the test session exported (REDIS_URL, API_KEYS...)."""
    names = {f.name.upper() for f in fields(Config)}
    return {key: value for key, value in os.environ.items() if key not in names}


@pytest.fixture
def fresh_service(tmp_path: Path):
    """``ginrummy serve`` on a free port with none of the service's settings, as the quick
    start starts it; yields its base URL."""
    with running(tmp_path) as served:
        yield served.url


def test_the_walkthrough_is_marked_and_every_request_in_it_fails_loudly():
    blocks = marked_blocks("walkthrough", "sh")
    assert len(blocks) >= 5, "the README's walk-through blocks are not marked <!-- walkthrough -->"
    assert f"BASE={DOCUMENTED_BASE}\n" in blocks[0], "the first walk-through block must set BASE"
    commands = [command for block in blocks for command in curl_commands(block)]
    assert len(commands) >= 10
    quiet = [command for command in commands if not fails_on_http_errors(command)]
    assert not quiet, f"curl without -f or a status check: {quiet}"


def test_the_curl_check_catches_a_request_that_would_pass_silently():
    """Guards the test above: a curl without -f and without a status check is caught."""
    assert not fails_on_http_errors("curl -s -X POST $BASE/v1/games/$GAME/pass")
    assert fails_on_http_errors("curl -sf -X POST $BASE/v1/games/$GAME/pass")
    assert fails_on_http_errors("curl -s -o p.json -w '%{http_code}' $BASE/v1/games")


def run_walkthrough(blocks: list[str], base: str, workdir: Path) -> str:
    """Run ``blocks`` in order as one bash script (``set -euo pipefail``) in the empty directory
    ``workdir``, against the service at ``base`` (the only change: the documented base URL in
    the block that sets ``BASE``); returns its output, or fails the test with both outputs."""
    script = "\n".join(blocks).replace(f"BASE={DOCUMENTED_BASE}", f"BASE={base}", 1)
    assert ":8000" not in script
    workdir.mkdir()
    (workdir / "walkthrough.sh").write_text("set -euo pipefail\n" + script, encoding="utf-8")
    # python3 in the blocks is whatever the reader has; here, this interpreter.
    environment = service_environment() | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(["bash", "walkthrough.sh"], cwd=workdir, env=environment, capture_output=True,
                            text=True, timeout=WALKTHROUGH_SECONDS)
    assert result.returncode == 0, f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    return result.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None, reason="needs curl and bash")
def test_the_walkthrough_runs_as_written(fresh_service: str, tmp_path: Path):
    out = run_walkthrough(marked_blocks("walkthrough", "sh"), fresh_service, tmp_path / "walkthrough")
    assert "the retry got the first answer" in out
    assert re.search(r"^(gin|knock|undercut|dead) \| seat", out, re.MULTILINE), out
    assert "finished {'status': 'finished', 'winner': 1, 'forfeit': 0" in out
    assert '"code": "game_finished"' in out
    assert "next match g_" in out
    assert "is honest" in out and re.search(r"^Ann: \d+ decisions, the strong player agreed with \d+$", out, re.MULTILINE)


def test_the_webhook_receiver_accepts_signed_deliveries_and_refuses_others(monkeypatch):
    (code,) = marked_blocks("webhook-receiver", "python")
    secret_text = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # base64 of 24 bytes
    monkeypatch.setenv("WEBHOOK_SECRET", secret_text)
    namespace: dict = {"__name__": "readme_receiver"}
    exec(compile(code, "README.md (receiver)", "exec"), namespace)
    server = HTTPServer(("127.0.0.1", 0), namespace["Receiver"])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        body = '{"type":"turn","timestamp":"2026-12-01T10:00:00Z","data":{"game_id":"g_x","seat":0}}'
        signed = WebhookSecret.parse(secret_text).headers("wh_g_x_4_turn", int(time.time()), body)
        assert _post(server, body, signed) == 204
        assert _post(server, body, signed) == 204  # a retry: acknowledged, handled once
        assert namespace["seen"] == {"wh_g_x_4_turn"}
        assert _post(server, body.replace("0}", "1}"), signed) == 400  # body changed after signing
        other = WebhookSecret.parse("whsec_" + "A" * 32).headers("wh_g_x_5_turn", int(time.time()), body)
        assert _post(server, body, other) == 400  # another secret
    finally:
        server.shutdown()
        server.server_close()


def _post(server: HTTPServer, body: str, headers: dict[str, str]) -> int:
    connection = http.client.HTTPConnection(*server.server_address, timeout=5)
    try:
        connection.request("POST", "/hooks", body.encode(), {"Content-Type": "application/json", **headers})
        return connection.getresponse().status
    finally:
        connection.close()


def _settings_table_names() -> list[str]:
    """The variable names in the first column of the README's Settings table."""
    section = README.read_text(encoding="utf-8").split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1])]


def _gunicorn_settings() -> set[str]:
    source = (REPO / "service" / "gunicorn_conf.py").read_text(encoding="utf-8")
    return set(re.findall(r"""(?:env_int|os\.environ\.get)\(\s*["']([A-Z][A-Z0-9_]+)["']""", source)) | {"PROMETHEUS_MULTIPROC_DIR"}


def test_the_settings_table_lists_every_setting_once():
    """One table for every setting the service and gunicorn read: none missing, none twice."""
    listed = _settings_table_names()
    duplicates = sorted({name for name in listed if listed.count(name) > 1})
    assert not duplicates, f"listed twice: {duplicates}"
    wanted = {f.name.upper() for f in fields(Config)} | _gunicorn_settings()
    missing = sorted(wanted - set(listed))
    assert not missing, f"settings missing from the README's table: {missing}"
    # Only one settings table: no second "| variable |" header anywhere in the README.
    assert README.read_text(encoding="utf-8").count("| variable |") == 1


def test_no_owned_document_links_outside_the_repository():
    """The README, bench/README.md and docs/ stand alone: links are web addresses or paths inside
    the repository."""
    documents = [README, REPO / "CHANGELOG.md", REPO / "bench" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for document in documents:
        text = document.read_text(encoding="utf-8")
        assert "../shared" not in text and "/work/" not in text, document
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (document.parent / target.split("#", 1)[0]).resolve()
            assert path.is_relative_to(REPO) and path.exists(), f"{document.name}: broken link {target}"
