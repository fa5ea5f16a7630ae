"""The ``ginrummy`` command: ``openapi`` writes the document, ``serve`` answers HTTP."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import requests

from service.api.docs.routes import openapi_text
from service.cli import main
from tests.api.conftest import build_app
from tests.redis_servers import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_openapi_writes_the_document(tmp_path):
    target = tmp_path / "out" / "openapi.json"
    assert main(["openapi", "--output", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == openapi_text(build_app(REDIS_URL="memory://"))
    assert target.read_text(encoding="utf-8").endswith("}\n")


def test_serve_runs_the_service_on_the_embedded_store():
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    server = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 15
        while True:
            try:
                assert requests.get(f"{base}/healthz", timeout=1).json() == {"status": "ok"}
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
                time.sleep(0.1)
        created = requests.post(
            f"{base}/v1/games", json={"variant": "classic", "players": [{"name": "A"}, {"name": "B"}]}, timeout=5
        )
        assert created.status_code == 201
        assert requests.get(f"{base}{created.headers['Location']}", timeout=5).status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=10)
    said = server.stderr.read()
    assert b"memory://" in said and f"listening on http://127.0.0.1:{port}".encode() in said


def test_serve_names_a_setting_it_cannot_use_without_a_traceback():
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    done = subprocess.run([sys.executable, "-m", "service.cli", "serve", "--port", str(free_port())], cwd=ROOT,
                          env={**env, "PYTHONPATH": str(ROOT), "GAME_TTL_SECONDS": "abc"}, capture_output=True,
                          timeout=60)
    assert done.returncode == 2
    assert "GAME_TTL_SECONDS" in done.stderr.decode() and "Traceback" not in done.stderr.decode()
