"""Problem codes are declared where they are raised, each once: a new one needs no central table.

The declarations made here go to a copy of the registry (and of the documented responses),
so that the app's OpenAPI document never sees them.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from flask_smorest import Blueprint

import service
from service.api import problems
from service.api.problems import HTTP_CODES, codes_of, documents_problems, problem_document, refusal_problem
from service.rules import errors
from service.rules.errors import GameError, declare, title_of
from tests.api.conftest import build_app

SOURCES = Path(service.__file__).parent


@pytest.fixture
def registry(monkeypatch):
    """The registry and the documented responses as they are, restored after the test."""
    monkeypatch.setattr(errors, "_DECLARED", dict(errors._DECLARED))
    monkeypatch.setattr(problems, "_SHARED", dict(problems._SHARED))
    monkeypatch.setattr(problems, "_DOCUMENTED", set(problems._DOCUMENTED))


def documented(problems_by_status: dict) -> str:
    """The description ``documents_problems`` gives an operation answering ``problems_by_status``."""
    def operation():
        """An operation."""
    return documents_problems(Blueprint("probe", __name__), problems_by_status)(operation).__doc__


def test_a_refusal_class_declares_its_codes_and_routes_may_document_them(registry):
    class Jammed(GameError):
        status = 409
        code = "printer_jammed"
        titles = {"printer_jammed": "The printer is jammed"}

    assert codes_of(409)[-1] == "printer_jammed" and title_of("printer_jammed") == "The printer is jammed"
    assert problem_document(refusal_problem(Jammed("paper everywhere")))["title"] == "The printer is jammed"
    assert "409 `printer_jammed`" in documented({409: ["printer_jammed"]})


def test_a_code_answered_without_a_refusal_class_is_declared_the_same_way(registry):
    declare(429, "too_much_tea", "Too much tea")

    assert "too_much_tea" in codes_of(429) and title_of("too_much_tea") == "Too much tea"
    assert "429 `too_much_tea`" in documented({429: ["too_much_tea"]})


def test_a_route_may_not_document_a_code_with_a_status_it_is_never_answered_with(registry):
    with pytest.raises(ValueError, match="store_full"):
        documented({409: ["store_full"]})
    with pytest.raises(ValueError, match="never_declared"):
        documented({422: ["never_declared"]})


def test_a_code_is_declared_once(registry):
    with pytest.raises(ValueError, match="not_your_turn"):
        declare(409, "not_your_turn", "Not your turn")
    with pytest.raises(ValueError, match="not_your_turn"):
        declare(422, "not_your_turn", "Wait for your turn")
    with pytest.raises(ValueError, match="game_expired"):
        class Expired(GameError):  # noqa: F841 - declaring is what is tested
            status = 410
            titles = {"game_expired": "Too late"}


def test_a_code_may_be_answered_with_another_status_under_its_one_title(registry):
    # As invalid_request: 422 from the engine and the schema, 400 for a body that is not JSON.
    declare(400, "not_your_turn", title_of("not_your_turn"))

    assert "not_your_turn" in codes_of(400) and "not_your_turn" in codes_of(409)


def source_trees() -> dict[Path, ast.Module]:
    """The service's source files, parsed."""
    return {path: ast.parse(path.read_text(), filename=str(path)) for path in sorted(SOURCES.rglob("*.py"))}


def raised_codes() -> dict[str, str]:
    """Every code the service's source names as a refusal's: a ``code="..."`` argument or a
    class's ``code = "..."``, with where it stands."""
    found = {}
    for path, tree in source_trees().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "code" and isinstance(node.value, ast.Constant):
                found[node.value.value] = f"{path.relative_to(SOURCES)}:{node.value.lineno}"
            elif isinstance(node, ast.ClassDef):
                for statement in node.body:
                    if (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant)
                            and [getattr(target, "id", None) for target in statement.targets] == ["code"]):
                        found[statement.value.value] = f"{path.relative_to(SOURCES)}:{statement.lineno}"
    return found


def test_every_code_the_service_answers_is_declared():
    build_app(REDIS_URL="memory://")  # imports every module that declares codes
    answered = {**raised_codes(), **{code: "HTTP_CODES" for code in HTTP_CODES.values()}}
    assert len(answered) > 40  # the scan sees the service's refusals
    assert {code: where for code, where in answered.items() if title_of(code) is None} == {}


def written_problems() -> list[tuple[str, str, str]]:
    """Every problem the service's source writes with its code and title spelled out (the
    middleware's, the metrics' bearer check, ...): (code, title, where). A constant is
    followed to its module-level assignment."""
    sources = source_trees()
    constants = {target.id: node.value.value for tree in sources.values() for node in tree.body
                 if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                 for target in node.targets if isinstance(target, ast.Name)}

    def value(node: ast.expr) -> object:
        return node.value if isinstance(node, ast.Constant) else constants.get(getattr(node, "id", None))

    found = []
    for path, tree in sources.items():
        for node in ast.walk(tree):
            name = getattr(getattr(node, "func", None), "id", None)
            if isinstance(node, ast.Call) and name in ("problem", "problem_body", "problem_json") and len(node.args) >= 3:
                code, title = value(node.args[1]), value(node.args[2])
                if isinstance(code, str) and isinstance(title, str):
                    found.append((code, title, f"{path.relative_to(SOURCES)}:{node.lineno}"))
    return found


def test_a_problem_written_outside_the_refusals_has_its_codes_one_title():
    build_app(REDIS_URL="memory://")  # imports every module that declares codes
    written = written_problems()
    assert {"payload_too_large", "rate_limited", "unauthorized"} <= {code for code, _, _ in written}
    assert [(code, title, where) for code, title, where in written if title_of(code) not in (None, title)] == []
