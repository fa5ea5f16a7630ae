"""docs/architecture.md: the bots are decision policies on top of service/rules, so service/bots
and every module in it import nothing but the standard library, service.rules and themselves:
no storage, HTTP, Flask, Redis, service.store, service.api or service.games."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import service.bots

PACKAGE = Path(service.bots.__file__).parent
ALLOWED = ("service.rules", "service.bots")


def module_name(path: Path, root: Path) -> str:
    """The dotted name of a module file under ``root`` (the repository)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path, root: Path) -> list[str]:
    """Every module a file imports, absolute (relative imports resolved; for ``from X import y``
    both X and, when it names a module, X.y matter, so X.y is listed when X is a package prefix
    of an allowed one, e.g. ``from service import rules`` lists service.rules)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if any(allowed.startswith(base + ".") for allowed in ALLOWED) or base == "":
                found += [f"{base}.{alias.name}".lstrip(".") for alias in node.names]
            else:
                found.append(base)
    return found


def is_allowed(module: str) -> bool:
    return (module.split(".")[0] in sys.stdlib_module_names
            or any(module == allowed or module.startswith(allowed + ".") for allowed in ALLOWED))


def outside_imports(path: Path, root: Path) -> list[str]:
    return [module for module in imported_names(path, root) if not is_allowed(module)]


def test_the_checker_tells_allowed_imports_from_the_rest(tmp_path):
    sample = tmp_path / "service" / "bots" / "policy" / "sample.py"
    sample.parent.mkdir(parents=True)
    sample.write_text(
        "from __future__ import annotations\nimport json, random\nfrom . import search\nfrom .. import Level\n"
        "from service import rules\nfrom service.rules.melds import arrange\nfrom ...rules import observe\n"
        "import redis\nfrom flask import Flask\nfrom service import store\nfrom ... import games\n"
        "from service.api import app\nimport service.games.flow\nfrom ...store.redis import RedisStore\n")
    assert outside_imports(sample, tmp_path) == [
        "redis", "flask", "service.store", "service.games", "service.api", "service.games.flow", "service.store.redis"]


def test_the_bots_package_has_modules_to_check():
    assert (PACKAGE / "__init__.py").is_file()


def test_every_module_of_service_bots_imports_only_the_standard_library_and_service_rules():
    root = PACKAGE.parent.parent
    offenders = {str(path.relative_to(root)): outside_imports(path, root) for path in sorted(PACKAGE.rglob("*.py"))}
    assert {name: bad for name, bad in offenders.items() if bad} == {}


def test_importing_service_bots_loads_no_module_outside_the_standard_library_and_service_rules():
    """What the import really pulls in, indirect imports and package __init__ files included."""
    code = "import sys, service.bots; print('\\n'.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], cwd=PACKAGE.parent.parent, capture_output=True, text=True,
                            check=True).stdout.split()
    outside = [m for m in loaded if not is_allowed(m) and m != "service" and not m.startswith("_")]
    assert outside == []
