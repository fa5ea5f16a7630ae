"""A player's pointer to their open ticket on Redis (service/store/matchmaking_redis.py): taken
before the ticket is stored, so a pointer whose ticket does not exist yet is another request's
in flight and holds, while one left behind by a crash is replaced once it is old."""
from __future__ import annotations

import time

import pytest
import redis

from service.store import store_from_url
from service.store.keys import scope_key
from service.store.matchmaking import AlreadyOpen, Player, Ticket, TicketStatus, queue_id
from service.store.matchmaking_redis import RedisTickets, player_pointer
from service.ids import new_id

SCOPE = "key-1"
RULES = {"target_score": 100}
QUEUE = queue_id(SCOPE, "classic", RULES, False)


@pytest.fixture
def tickets(redis_url, key_prefix):
    store = store_from_url(redis_url, key_prefix)
    yield RedisTickets(store.client, key_prefix, store.notifier)
    store.close()


def new_ticket(player: str) -> Ticket:
    now = time.time()
    return Ticket(new_id("t_"), SCOPE, QUEUE, Player(player, "Ann"), "classic", RULES, False, None, None, None,
                  now, now + 900)


def set_pointer(redis_url: str, key_prefix: str, player: str, ticket_id: str, taken_at: float) -> None:
    """What a request leaves between taking the pointer and storing its ticket (or a crash there)."""
    with redis.Redis.from_url(redis_url) as client:
        client.hset(scope_key(key_prefix, SCOPE, "open"), player_pointer(player), f"{ticket_id} {taken_at!r}")


def test_a_pointer_whose_ticket_is_being_stored_holds(tickets, redis_url, key_prefix):
    in_flight = new_ticket("ann")
    set_pointer(redis_url, key_prefix, "ann", in_flight.id, time.time())
    with pytest.raises(AlreadyOpen) as refused:
        tickets.open(new_ticket("ann"), 10, 60)
    assert refused.value.ticket_id == in_flight.id
    # The request in flight then stores its ticket, as its own pointer allows.
    assert tickets.open(in_flight, 10, 60).status == TicketStatus.WAITING


def test_a_pointer_left_behind_by_a_crash_is_replaced_once_old(tickets, redis_url, key_prefix):
    set_pointer(redis_url, key_prefix, "bob", new_ticket("bob").id, time.time() - 3600)
    fresh = new_ticket("bob")
    assert tickets.open(fresh, 10, 60).id == fresh.id
    with pytest.raises(AlreadyOpen) as refused:
        tickets.open(new_ticket("bob"), 10, 60)
    assert refused.value.ticket_id == fresh.id


def test_a_released_pointer_frees_the_player(tickets):
    first = tickets.open(new_ticket("cy"), 10, 60)
    tickets.release_player(tickets.close(first.id, TicketStatus.CANCELLED))
    assert tickets.open(new_ticket("cy"), 10, 60).status == TicketStatus.WAITING
