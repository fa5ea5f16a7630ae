"""Fixtures of the checks made as a service's users make them."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.client.served import Served, running


# The deal mixes a match's seed with the server's secret, a random one per start when none is
# set: with this one, a seeded match deals the same cards in every run.
SERVER_SECRET = "tests-client-server-secret-0123456789"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The quick start's service (embedded store, anonymous creation allowed), with a fixed
    server secret."""
    with running(tmp_path_factory.mktemp("serve"), SERVER_SECRET=SERVER_SECRET) as served:
        yield served
