"""requirements.lock: exact pins of the runtime dependencies that the image installs;
requirements-test.lock: exact pins of everything the tests install (.ci/run, the README)."""
from __future__ import annotations

import tomllib
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.support import REPO

LOCK = REPO / "requirements.lock"
TEST_LOCK = REPO / "requirements-test.lock"
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
TEST_EXTRAS = PROJECT["optional-dependencies"]["test"]


def locked(lock=LOCK) -> dict[str, str]:
    """Package name (canonical) -> pinned version."""
    pins = {}
    for line in lock.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, separator, version = line.partition("==")
        assert separator and version.strip(), f"not an exact pin: {line!r}"
        pins[canonicalize_name(name)] = version.strip()
    return pins


def closure(requirements: list[str]) -> set[str]:
    """The names of ``requirements`` and all they pull in, read from the metadata of the
    installed packages (extras followed, environment markers evaluated)."""
    pending = [Requirement(text) for text in requirements]
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
    assert set(locked()) == closure(PROJECT["dependencies"])


def test_the_test_lock_pins_exactly_what_the_tests_install() -> None:
    # Its generation, written at its top, freezes a venv of the project with its test extras:
    # nothing missing (a checker would come unpinned), nothing else, not the project itself.
    assert set(locked(TEST_LOCK)) == closure([*PROJECT["dependencies"], *TEST_EXTRAS])


def test_the_test_lock_keeps_the_runtime_pins_and_the_extras_ranges() -> None:
    pins = locked(TEST_LOCK)
    runtime = locked()
    assert {name: pins.get(name) for name in runtime} == runtime, "regenerate it with -c requirements.lock"
    for text in TEST_EXTRAS:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert requirement.specifier.contains(pins[name]), (name, pins[name], str(requirement.specifier))
