"""What the deployment tests read: the Dockerfile's instructions, tools, gunicorn's settings."""
from __future__ import annotations

import base64
import json
import secrets as random_source
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
K8S_DIR = REPO / "k8s"
# The Deploy section of the README (the lead merges it into README.md).
DEPLOY_DOCS = REPO / "README.md"


@dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction: ``keyword`` upper-cased, ``arguments`` as written."""

    keyword: str
    arguments: str


def dockerfile_instructions(path: Path = DOCKERFILE) -> list[Instruction]:
    """The instructions of a Dockerfile, continuation lines joined, comments dropped."""
    instructions: list[Instruction] = []
    pending = ""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):  # Docker drops these, even mid-instruction
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        keyword, _, arguments = (pending + stripped).partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip()))
        pending = ""
    return instructions


def final_stage(instructions: list[Instruction]) -> list[Instruction]:
    """The instructions of the last stage (the image that is shipped), its FROM first."""
    starts = [index for index, item in enumerate(instructions) if item.keyword == "FROM"]
    return instructions[starts[-1]:]


def shipped(keyword: str) -> list[str]:
    """The arguments of each ``keyword`` instruction of the final stage, in order."""
    return [item.arguments for item in final_stage(dockerfile_instructions()) if item.keyword == keyword]


def image_command() -> list[str]:
    """The shipped image's CMD, which must be in exec (JSON) form."""
    commands = shipped("CMD")
    assert commands, "the final stage has no CMD"
    return json.loads(commands[-1])


def healthcheck() -> tuple[str, list[str]]:
    """The options and the exec-form command of the final stage's one HEALTHCHECK."""
    [check] = shipped("HEALTHCHECK")
    options, _, command = check.partition("CMD ")
    return options, json.loads(command)


def tool(name: str) -> str:
    """An executable installed beside this Python (the venv's bin), else on PATH.

    The Python tools are test dependencies, so their absence fails the test. kubectl is the
    machine's: without it the test is skipped loudly, except under CI=true, where it fails."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        reason = f"{name} is not installed (pip install -c requirements-test.lock -e '.[test]'; kubectl comes with the machine)"
        if name == "kubectl" and os.environ.get("CI", "").lower() != "true":
            pytest.skip(f"KUBECTL MISSING, TEST NOT RUN: {reason}")
        pytest.fail(reason)
    return found


def gunicorn_settings(environ: dict[str, str]) -> dict[str, str]:
    """Gunicorn's effective settings under the image's config and ``environ`` alone.

    Runs ``gunicorn --print-config`` with the CMD's ``-c`` option in a clean environment,
    so nothing of the test process leaks in; values come back as gunicorn prints them."""
    command = image_command()
    config_option = command[command.index("-c"):command.index("-c") + 2]
    result = subprocess.run(
        [tool(command[0]), *config_option, "--print-config", INERT_APP],
        cwd=REPO,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **environ},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return dict(
        (name.strip(), value.strip())
        for name, _, value in (line.partition(" = ") for line in result.stdout.splitlines())
        if value
    )


def inert_app(environ, start_response):
    """A WSGI app that answers 204: ``gunicorn --print-config`` loads an app before it exits,
    and the settings tests are about gunicorn's configuration, not about the service."""
    start_response("204 No Content", [])
    return []


INERT_APP = f"{__name__}:inert_app"


def dockerignore_excludes(relative_path: str, patterns: list[str]) -> bool:
    """Whether Docker leaves ``relative_path`` out of the build context.

    Follows Docker's rules: the last pattern that matches the path or one of its parent
    directories decides; ``!`` re-includes; ``*`` stays within one path segment, ``**``
    crosses segments."""
    parts = relative_path.split("/")
    candidates = ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]
    excluded = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        regex = _pattern_regex(pattern.lstrip("!").strip("/"))
        if any(regex.fullmatch(candidate) for candidate in candidates):
            excluded = not negated
    return excluded


def dockerignore_patterns(path: Path = DOCKERIGNORE) -> list[str]:
    """The patterns of a .dockerignore, comments and blank lines dropped."""
    return [
        line.strip() for line in path.read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    regex = ""
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            regex += "(?:.*/)?"
            index += 3
        elif pattern.startswith("**", index):
            regex += ".*"
            index += 2
        elif pattern[index] == "*":
            regex += "[^/]*"
            index += 1
        elif pattern[index] == "?":
            regex += "[^/]"
            index += 1
        elif pattern[index] == "[":
            end = pattern.index("]", index)
            regex += pattern[index:end + 1]
            index = end + 1
        else:
            regex += re.escape(pattern[index])
            index += 1
    return re.compile(regex)


PLACEHOLDER = re.compile(r"REPLACE-ME[A-Za-z0-9-]*")


def real_secrets(environment: dict[str, str]) -> dict[str, str]:
    """``environment`` with each shipped placeholder replaced as an operator would: a webhook
    secret in its ``whsec_`` form, anything else (a password inside a URL included) by random
    letters and digits."""
    def replaced(name: str, value: str) -> str:
        if name == "WEBHOOK_SECRET" and PLACEHOLDER.search(value):
            return "whsec_" + base64.b64encode(random_source.token_bytes(32)).decode()
        return PLACEHOLDER.sub(lambda _: random_source.token_hex(24), value)

    return {name: replaced(name, value) for name, value in environment.items()}
