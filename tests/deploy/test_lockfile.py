"""requirements.lock: exact pins of the runtime dependencies that the image installs."""
from __future__ import annotations

import tomllib
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.support import REPO

LOCK = REPO / "requirements.lock"
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def locked() -> dict[str, str]:
    """Package name (canonical) -> pinned version."""
    pins = {}
    for line in LOCK.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, separator, version = line.partition("==")
        assert separator and version.strip(), f"not an exact pin: {line!r}"
        pins[canonicalize_name(name)] = version.strip()
    return pins


def runtime_closure() -> set[str]:
    """The names of the project's dependencies and all they pull in, read from the
    metadata of the installed packages (extras followed, environment markers evaluated)."""
    pending = [Requirement(text) for text in PROJECT["dependencies"]]
    seen: set[tuple[str, frozenset[str]]] = set()
    names: set[str] = set()
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        if (name, frozenset(requirement.extras)) in seen:
            continue
        seen.add((name, frozenset(requirement.extras)))
        names.add(name)
        for text in metadata.requires(requirement.name) or []:
            nested = Requirement(text)
            if nested.marker is None or any(
                nested.marker.evaluate({"extra": extra}) for extra in {"", *requirement.extras}
            ):
                pending.append(nested)
    return names


def test_every_line_is_an_exact_pin() -> None:
    assert locked()


def test_every_project_dependency_is_pinned_within_its_range() -> None:
    pins = locked()
    for text in PROJECT["dependencies"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is a dependency but not in requirements.lock"
        assert requirement.specifier.contains(pins[name]), (name, pins[name], str(requirement.specifier))


def test_lock_holds_exactly_the_runtime_closure() -> None:
    # Neither a missing transitive dependency (the image build's `pip check` would fail)
    # nor anything from the test or bench extras, nor the project itself.
    assert set(locked()) == runtime_closure()
