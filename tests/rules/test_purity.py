"""docs/architecture.md: the rules engine is pure, so service/rules imports nothing outside the standard library."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import service.rules

PACKAGE = Path(service.rules.__file__).parent
OWN = "service.rules"


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(level, module) of every import in a file: level 0 is absolute, above 0 relative."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or ""))
    return found


def outside_imports(path: Path) -> list[str]:
    bad = []
    for level, module in imported_modules(path):
        if level == 1:
            continue  # a sibling module of service/rules
        if level == 0 and (module.split(".")[0] in sys.stdlib_module_names or module == OWN
                           or module.startswith(OWN + ".")):
            continue
        bad.append("." * level + module)
    return bad


def test_the_rules_package_has_modules_to_check():
    assert {"cards.py", "melds.py", "hand.py", "match.py", "views.py"} <= {p.name for p in PACKAGE.glob("*.py")}


def test_the_checker_tells_standard_library_from_the_rest(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import json, random\nfrom . import cards\nfrom service.rules.melds import x\n"
                      "import redis\nfrom flask import Flask\nfrom .. import store\nfrom service.api import app\n")
    assert outside_imports(sample) == ["redis", "flask", "..", "service.api"]


def test_service_rules_imports_only_the_standard_library_and_itself():
    offenders = {path.name: outside_imports(path) for path in sorted(PACKAGE.rglob("*.py"))}
    assert {name: bad for name, bad in offenders.items() if bad} == {}
