"""The worker on other Redis set-ups: a private server restarted with AOF, a Redis Cluster."""
from __future__ import annotations

import time

import pytest

from service import ids
from service.store.redis_client import client_from_url
from service.webhooks.entries import FEED, OUTBOX, ShardKeys
from tests.redis_servers import RedisServer
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import add_entry, game_in_shard, deliveries_settled, wait_until

pytestmark = pytest.mark.timeout(90)


def test_nothing_is_lost_when_redis_restarts_mid_run_with_aof(start_worker, secret: str, prefix: str, tmp_path) -> None:
    # appendfsync always: every write Redis acknowledged survives a SIGKILL.
    server = RedisServer(tmp_path / "redis", extra_args=("--appendonly", "yes", "--appendfsync", "always")).start()

    def slowly(request, count) -> int:
        time.sleep(0.05)  # so that the restart happens with deliveries still to do
        return 200

    receiver = Receiver(secret, slowly).start()
    client = server.client()
    try:
        worker = start_worker(url=server.url, concurrency=2)
        before = {add_entry(client, prefix, receiver.url())["id"] for _ in range(30)}
        receiver.wait_for(lambda got: len(got) >= 5)
        server.kill()
        assert len(set(receiver.ids())) < len(before)  # really mid-run
        server.start()
        after = {add_entry(client, prefix, receiver.url())["id"] for _ in range(10)}
        receiver.wait_for(lambda got: {request.webhook_id for request in got} >= before | after, timeout=45)
        assert all(request.verified for request in receiver.received)
        wait_until(lambda: deliveries_settled(client, prefix), timeout=20, what="every entry acknowledged")
        worker.stop()
        assert worker.join(10)
    finally:
        receiver.close()
        client.close()
        server.stop()


@pytest.fixture
def cluster_client(redis_cluster_url: str):
    client = client_from_url(redis_cluster_url, decode_responses=True)
    yield client
    client.close()


def test_on_a_cluster_every_shard_is_delivered_and_retried(
    start_worker, secret: str, prefix: str, redis_cluster_url: str, cluster_client
) -> None:
    receiver = Receiver(secret, lambda request, count: 500 if count == 1 else 200).start()
    try:
        start_worker(url=redis_cluster_url)
        # A shard's feed and the outbox of older versions share its slot: one read takes both.
        sent = {
            add_entry(cluster_client, prefix, receiver.url(), game_id=game_in_shard(shard), stream=stream)["id"]
            for shard in range(ids.SHARDS) for stream in (FEED, OUTBOX)
        }
        # Each entry fails once, then goes through its shard's retry set.
        received = receiver.wait_for(lambda got: len(got) >= 2 * len(sent), timeout=30)
        assert sorted(request.webhook_id for request in received) == sorted(list(sent) * 2)
        assert all(request.verified for request in received)
        wait_until(lambda: deliveries_settled(cluster_client, prefix), what="every entry acknowledged")
        for shard in range(ids.SHARDS):
            keys = ShardKeys.of(prefix, shard)
            wait_until(lambda keys=keys: cluster_client.zcard(keys.retry) == 0, what="retry sets emptied")
    finally:
        receiver.close()
