"""The Dockerfile and .dockerignore, checked without a Docker engine (none runs here)."""
from __future__ import annotations

import re
import shlex
import subprocess

import pytest

from tests.deploy.support import (
    DEPLOY_DOCS,
    DOCKERFILE,
    REPO,
    dockerfile_instructions,
    dockerignore_excludes,
    dockerignore_patterns,
    healthcheck,
    image_command,
    shipped,
    tool,
)

# The command line the service is documented to run with (README, Deploy).
DOCUMENTED_COMMAND = ["gunicorn", "-c", "python:service.gunicorn_conf", "service.wsgi:app"]
SLIM_PYTHON_TAG = re.compile(r"python:3\.(11|12)\.\d+-slim(-[a-z]+)?")


def test_hadolint_finds_nothing() -> None:
    result = subprocess.run(
        [tool("hadolint"), "--no-color", str(DOCKERFILE)],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def test_hadolint_would_catch_an_unpinned_pip_install(tmp_path) -> None:
    """Guards the test above: hadolint runs with its rules, not a config that mutes them."""
    bad = tmp_path / "Dockerfile"
    bad.write_text(DOCKERFILE.read_text() + "RUN pip install --no-cache-dir flask\n")
    result = subprocess.run(
        [tool("hadolint"), "--no-color", str(bad)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert "DL3013" in result.stdout


def test_cmd_is_the_documented_command_in_exec_form() -> None:
    # Exec form: gunicorn itself is PID 1 and receives SIGTERM, no shell in between.
    assert image_command() == DOCUMENTED_COMMAND


def test_deploy_docs_show_the_same_command() -> None:
    lines = [line.strip().strip("`") for line in DEPLOY_DOCS.read_text().splitlines()]
    documented = [shlex.split(line) for line in lines if line.startswith("gunicorn -c ")]
    assert documented, f"{DEPLOY_DOCS.name} does not show the gunicorn command line"
    assert all(command == DOCUMENTED_COMMAND for command in documented), documented


def test_every_stage_uses_the_same_pinned_slim_python() -> None:
    images = [item.arguments.split()[0] for item in dockerfile_instructions() if item.keyword == "FROM"]
    assert len(images) >= 2, "expected a builder stage and a runtime stage"
    # The runtime stage runs the builder's virtualenv, so the interpreters must be identical.
    assert len(set(images)) == 1, images
    assert SLIM_PYTHON_TAG.fullmatch(images[0]), images[0]


def test_runtime_stage_runs_as_a_numeric_non_root_user() -> None:
    users = shipped("USER")
    assert users, "the final stage sets no USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, users[-1]


def test_runtime_stage_exposes_port_8000_only() -> None:
    assert [port for ports in shipped("EXPOSE") for port in ports.split()] == ["8000"]


def test_healthcheck_asks_healthz_with_python() -> None:
    options, command = healthcheck()
    assert "--timeout=" in options and "--interval=" in options
    # slim images have no curl: the check must run with the image's own Python.
    assert command[:2] == ["python", "-c"]
    assert "/healthz" in command[2]


def test_stop_signal_is_sigterm() -> None:
    signals = [item.arguments for item in dockerfile_instructions() if item.keyword == "STOPSIGNAL"]
    assert signals in ([], ["SIGTERM"])


def copied_sources() -> list[str]:
    """Every path the Dockerfile copies from the build context (not from another stage)."""
    sources = []
    for item in dockerfile_instructions():
        if item.keyword != "COPY" or "--from=" in item.arguments:
            continue
        sources.extend(item.arguments.split()[:-1])
    return sources


@pytest.mark.parametrize("source", copied_sources())
def test_copied_sources_exist_and_reach_the_build_context(source: str) -> None:
    assert (REPO / source).exists(), f"the Dockerfile copies {source}, which is missing"
    assert not dockerignore_excludes(source.rstrip("/"), dockerignore_patterns())


@pytest.mark.parametrize(
    "path",
    [".git/config", "tests/conftest.py", "k8s/secrets.env", "service/__pycache__/app.cpython-311.pyc",
     ".venv/bin/python", "Dockerfile"],
)
def test_build_context_leaves_out(path: str) -> None:
    assert dockerignore_excludes(path, dockerignore_patterns())


def test_packaged_links_resolve_inside_the_build_context() -> None:
    # A link under service/ (the rules served at /docs/rules.md) is followed when the wheel is
    # built: what it points to must be copied as well.
    copied = [REPO / source.rstrip("/") for source in copied_sources()]
    links = [path for path in (REPO / "service").rglob("*") if path.is_symlink()]
    assert links
    for link in links:
        target = link.resolve()
        assert target.is_file() and any(target == c or c in target.parents for c in copied), link


def test_service_sources_reach_the_build_context() -> None:
    sources = sorted(path.relative_to(REPO).as_posix() for path in (REPO / "service").rglob("*.py"))
    assert sources
    assert [path for path in sources if dockerignore_excludes(path, dockerignore_patterns())] == []
