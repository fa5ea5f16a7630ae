"""Fixtures of the checks made as a service's users make them."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.client.served import Served, running


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The quick start's service: embedded store, anonymous creation allowed."""
    with running(tmp_path_factory.mktemp("serve")) as served:
        yield served
