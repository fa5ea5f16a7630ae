"""Fixtures of the deployment tests."""
from __future__ import annotations

import subprocess

import pytest
import yaml

from tests.deploy.support import K8S_DIR, tool


@pytest.fixture(scope="session")
def manifests() -> list[dict]:
    """The resources that ``kubectl kustomize k8s`` builds (what ``kubectl apply -k`` sends)."""
    result = subprocess.run(
        [tool("kubectl"), "kustomize", str(K8S_DIR)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return [resource for resource in yaml.safe_load_all(result.stdout) if resource]
