"""A ticket's and an invite's long-poll send Redis nothing while nothing changes, and wake at
once when something does. Measured on a private redis-server (INFO commandstats), so that no
other traffic mixes in; no worker runs beside the app (its timer polls are its own traffic)."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.e2e.waiters import changed, command_calls
from tests.matchmaking.support import quick_play_service
from tests.matchmaking.test_invites_http import accept, invited, read
from tests.redis_servers import RedisServer

QUIET_SECONDS = 1.5


@pytest.fixture
def private_service(tmp_path) -> Iterator:
    server = RedisServer(tmp_path / "redis").start()
    service = quick_play_service("redis", server.url, "quiet:", worker=False)
    yield service, server
    service.close()
    server.stop()


class LongPoll:
    """A request in a thread: its answer and when it came."""

    def __init__(self, send) -> None:
        self.answer = None
        self.at = 0.0
        self.thread = threading.Thread(target=self._run, args=(send,))
        self.thread.start()

    def _run(self, send) -> None:
        self.answer = send()
        self.at = time.monotonic()

    def join(self):
        self.thread.join(20)
        assert not self.thread.is_alive()
        return self.answer


def quiet_while_waiting(server: RedisServer, subscribed) -> dict[str, int]:
    """The commands Redis ran while a long-poll waited, from once it ``subscribed``."""
    with server.client() as admin:
        deadline = time.monotonic() + 5
        while not subscribed(admin):
            assert time.monotonic() < deadline, "the long-poll did not subscribe"
            time.sleep(0.02)
        time.sleep(0.2)  # the waiter's read after subscribing is done
        before = command_calls(admin)
        time.sleep(QUIET_SECONDS)
        return changed(before, command_calls(admin))


def shard_channels(admin) -> list[str]:
    return admin.execute_command("PUBSUB", "SHARDCHANNELS")


def test_a_ticket_long_poll_costs_nothing_while_idle_and_wakes_on_the_match(private_service):
    service, server = private_service
    ann = service.opened("ann")
    poll = LongPoll(lambda: service.ticket(ann["id"], wait=10))
    sent = quiet_while_waiting(server, lambda admin: any(ann["id"] in c for c in shard_channels(admin)))
    assert sent == {}, sent
    bob = service.opened("bob")
    matched_at = time.monotonic()
    ticket = poll.join()
    assert ticket["status"] == "matched" and ticket["game_id"] == bob["game_id"]
    assert poll.at - matched_at < 0.5


def test_an_invite_long_poll_costs_nothing_while_idle_and_wakes_on_acceptance(private_service):
    service, server = private_service
    code = invited(service)["code"]
    poll = LongPoll(lambda: read(service, code, wait=10).get_json()["invite"])
    sent = quiet_while_waiting(server, lambda admin: any(code in c for c in shard_channels(admin)))
    assert sent == {}, sent
    accepted = accept(service, code, "bob").get_json()
    accepted_at = time.monotonic()
    host = poll.join()
    assert host["status"] == "accepted" and host["game_id"] == accepted["game"]["id"]
    assert poll.at - accepted_at < 0.5
