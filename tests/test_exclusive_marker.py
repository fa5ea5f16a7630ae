"""The ``exclusive`` marker (tests/conftest.py): under ``pytest -n 2`` an exclusive test runs
while no other test does, nor the setup or teardown of another module's fixtures, and the other
tests still run side by side."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]

SAMPLE = '''
import os
import time

import pytest

LOG = os.environ["EXCLUSIVE_LOG"]


def record(name, seconds):
    with open(LOG, "a") as log:
        log.write(f"{name} start {time.monotonic()}\\n")
    time.sleep(seconds)
    with open(LOG, "a") as log:
        log.write(f"{name} end {time.monotonic()}\\n")


@pytest.mark.exclusive
def test_alone():
    record("alone", 1.0)


@pytest.mark.parametrize("number", range(8))
def test_ordinary(number):
    record(f"ordinary{number}", 0.3)
'''

# A module whose fixture takes a while to set up and to tear down, as a server or a browser does.
WITH_MODULE_FIXTURE = '''
import pytest

from test_sample import record


@pytest.fixture(scope="module")
def slow_resource():
    record("module_setup", 0.4)
    yield
    record("module_teardown", 0.4)


@pytest.mark.parametrize("number", range(3))
def test_uses_it(slow_resource, number):
    record(f"user{number}", 0.1)
'''


def intervals(log: Path) -> dict[str, tuple[float, float]]:
    marks: dict[str, dict[str, float]] = {}
    for line in log.read_text().splitlines():
        name, what, moment = line.split()
        marks.setdefault(name, {})[what] = float(moment)
    return {name: (mark["start"], mark["end"]) for name, mark in marks.items()}


@pytest.mark.slow
def test_an_exclusive_test_runs_alone_and_the_others_side_by_side(pytester: pytest.Pytester, monkeypatch) -> None:
    log = pytester.path / "log.txt"
    monkeypatch.setenv("EXCLUSIVE_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makeconftest("from tests.conftest import pytest_runtest_protocol  # noqa: F401\n")
    pytester.makeini("[pytest]\nmarkers =\n    exclusive: runs alone\n")
    pytester.makepyfile(test_sample=SAMPLE, test_with_module_fixture=WITH_MODULE_FIXTURE)
    # One file per worker: the exclusive test starts one while the other sets up its module.
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=12)

    ran = intervals(log)
    assert {"module_setup", "module_teardown"} <= ran.keys()
    alone_start, alone_end = ran.pop("alone")
    for name, (start, end) in ran.items():
        assert end <= alone_start or start >= alone_end, f"{name} overlapped the exclusive test"
    # Without the exclusive one, two workers do run tests at the same time.
    ordered = sorted(ran.values())
    assert any(later[0] < earlier[1] for earlier, later in zip(ordered, ordered[1:]))
