"""A long-poll whose client hung up ends without an answer: the WSGI layer hands the server a
connection reset (gunicorn closes the connection and writes nothing), the request is counted
with status 499 and not logged, and what it held is freed at once, not by a later collection.

Under gunicorn the hang-up is seen by the gevent worker's watch on the client's socket
(tests/e2e/test_waiting.py hangs up thousands of real clients at once); here the waiter is
told its client left the way that watch tells it."""
from __future__ import annotations

import gc
import logging
import weakref

import pytest

from service.store.waiter import Waiter
from tests.api.support import Table, store_of


@pytest.fixture
def hung_up_waiters(monkeypatch) -> list[weakref.ref]:
    """Every waiter's client hangs up as soon as it starts to wait; the list holds a weak
    reference to each."""
    real_wait = Waiter.wait
    waiters: list[weakref.ref] = []

    def hang_up_then_wait(waiter: Waiter, deadline: float) -> bool:
        waiters.append(weakref.ref(waiter))
        waiter.hang_up()
        return real_wait(waiter, deadline)

    monkeypatch.setattr(Waiter, "wait", hang_up_then_wait)
    return waiters


def test_a_long_poll_whose_client_hung_up_ends_as_a_reset_connection(redis_app, hung_up_waiters, caplog) -> None:
    client = redis_app.test_client()
    table = Table.open(redis_app, client)
    last = table.get(0, "/events").get_json()["last_seq"]
    caplog.set_level(logging.INFO, logger="ginrummy.access")
    gc.disable()  # what the request held must go by reference counting alone
    try:
        with pytest.raises(ConnectionResetError):
            table.get(0, "/events", after=last, wait=5)
        assert len(hung_up_waiters) == 1 and hung_up_waiters[0]() is None
    finally:
        gc.enable()
    assert [record for record in caplog.records if record.name == "ginrummy.access"] == []
    assert store_of(redis_app)._connection().notifier.waiting == 0
    metrics = client.get("/metrics").text
    assert 'http_requests_total{endpoint="/v1/games/<game_id>/events",method="GET",status="499"} 1.0' in metrics


def test_a_long_poll_that_is_answered_is_not_a_hang_up(redis_app) -> None:
    client = redis_app.test_client()
    table = Table.open(redis_app, client)
    last = table.get(0, "/events").get_json()["last_seq"]
    assert table.get(0, "/events", after=last, wait=0.2).get_json()["events"] == []
    assert 'status="499"' not in client.get("/metrics").text
