"""What importing a module really loads, package __init__ files and indirect imports included:
the check that a pure domain module stays pure (STYLE.md: no Flask, Redis, clock or I/O)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def loaded_outside(module: str, allowed: tuple[str, ...]) -> list[str]:
    """The modules a fresh interpreter has loaded after ``import module`` that are neither in
    the standard library nor under one of the ``allowed`` packages."""
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    return [name for name in loaded
            if name.split(".")[0] not in sys.stdlib_module_names and not name.startswith("_") and name != "service"
            and not any(name == package or name.startswith(package + ".") for package in allowed)]
