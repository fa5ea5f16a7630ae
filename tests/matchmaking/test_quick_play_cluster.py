"""Quick play and invites on a Redis Cluster (the session's private 3-master cluster): two apps,
each with its own store and clients as two service processes would have, and a worker's
background runner. A queue, its tickets, their timers and the matches they make share a slot, so
each match is one script on one node: a few hundred tickets from many threads are each matched
once, every match read, every token tried; bot fallbacks and an invite work there too."""
from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from tests.api.support import API_KEY
from tests.e2e.quick_play import check_match, matches_of, stored_games
from tests.matchmaking.support import QuickPlayService, quick_play_service, seats_of
from tests.matchmaking.test_invites_http import accept, invited, read
from tests.matchmaking.test_timed_pairing import settle_times

pytestmark = pytest.mark.slow

THREADS = 24


@pytest.fixture
def cluster_services(redis_cluster_url: str) -> Iterator[tuple[QuickPlayService, QuickPlayService]]:
    prefix = f"mm-cluster-{uuid.uuid4().hex[:8]}:"
    first = quick_play_service("redis", redis_cluster_url, prefix)  # with the worker's runner
    second = quick_play_service("redis", redis_cluster_url, prefix, worker=False)
    yield first, second
    first.close()
    second.close()


@pytest.fixture
def cluster_client(redis_cluster_url: str) -> Iterator[redis.RedisCluster]:
    client = redis.RedisCluster.from_url(redis_cluster_url.replace("redis+cluster://", "redis://"),
                                         decode_responses=True)
    yield client
    client.close()


def test_hundreds_of_tickets_from_two_processes_are_each_matched_once(cluster_services, cluster_client):
    services = cluster_services
    queues = [("classic", False, 120), ("box", False, 90), ("classic", True, 90)]
    wanted = [(variant, rated) for variant, rated, count in queues for _ in range(count)]
    random.Random(31).shuffle(wanted)
    players = [(f"player-{n}", variant, rated, services[n % 2]) for n, (variant, rated) in enumerate(wanted)]
    with ThreadPoolExecutor(THREADS) as pool:
        tickets = list(pool.map(lambda p: p[3].opened(p[0], p[1], rated=p[2]), players))
        settled = list(pool.map(lambda t: services[0].until_settled(t["id"], timeout=30), tickets))
    matches = matches_of(settled)
    assert len(matches) == 60 + 30 + 45
    for game_id, seated in matches.items():
        check_match(services[1].view(game_id).get_json(), seated)
        for ticket in seated:
            seen = services[0].view(game_id, ticket["token"])
            assert seen.status_code == 200 and seen.get_json()["you"]["seat"] == ticket["seat"]
    assert stored_games(cluster_client, services[0].prefix) == set(matches)


def test_bot_fallbacks_and_invites_work_on_a_cluster(cluster_services):
    service, other = cluster_services
    tickets = [service.opened(f"solo-{limit}", rules={"knock_limit": limit}, bot_after_seconds=1)
               for limit in range(1, 9)]
    settled = settle_times(other, [ticket["id"] for ticket in tickets], timeout=10)
    for ticket, _ in settled.values():
        assert ticket["status"] == "matched" and ticket["seat"] == 0
        view = service.view(ticket["game_id"], ticket["token"]).get_json()
        assert view["players"][1]["bot"] and view["rules"]["knock_limit"] == ticket["rules"]["knock_limit"]
    assert len({ticket["game_id"] for ticket, _ in settled.values()}) == len(tickets)

    code = invited(service, "ann")["code"]
    accepted = accept(other, code.lower(), "bob")
    assert accepted.status_code == 201, accepted.get_json()
    host = read(service, code).get_json()["invite"]
    assert host["status"] == "accepted" and host["game_id"] == accepted.get_json()["game"]["id"]
    assert service.view(host["game_id"], host["token"]).get_json()["you"]["seat"] == 0
    assert other.client().post(f"/v1/games/{host['game_id']}/players/0/token",
                               headers={"X-API-Key": API_KEY}).status_code == 200
    assert read(other, code).get_json()["invite"]["token"] is None

    box = invited(service, "ann", variant="box")["code"]
    assert accept(other, box, "bob").status_code == 202
    made = accept(service, box, "cy")
    assert made.status_code == 201, made.get_json()
    assert seats_of(made.get_json()["game"]) == ["ann", "bob", "cy"]
    assert accept(other, box, "bob").get_json()["game"]["id"] == made.get_json()["game"]["id"]
