"""Under real gunicorn with workers recycled every few requests (GUNICORN_MAX_REQUESTS): the
metrics directory stays bounded (dead workers' files are folded into archives by the master's
child_exit hook) and the request totals stay exact whichever worker answers the scrape."""
from __future__ import annotations

import json
import time

import pytest

from service import ids
from tests.gunicorn_server import GunicornServer
from tests.observability.test_observability_gunicorn import PROBE_APP, healthy, request, requests_counted, wait_until

pytestmark = pytest.mark.slow

MAX_REQUESTS = 10
# Worker processes that must have served before the figures are read. A gevent worker checks
# max_requests about once a second, so it may serve more than MAX_REQUESTS before it goes.
SERVED_BY = 8
WORKERS = 2
# Per live worker one counter and one histogram file; one archive of each for the dead ones.
BOUND = WORKERS * 2 + 2


@pytest.mark.timeout(180)
def test_recycled_workers_leave_a_bounded_directory_and_exact_totals(tmp_path):
    server = GunicornServer(tmp_path, app=PROBE_APP, workers=WORKERS, environment={
        "GUNICORN_MAX_REQUESTS": str(MAX_REQUESTS), "GUNICORN_MAX_REQUESTS_JITTER": "0"}).start()
    try:
        game_id = ids.new_game_id()
        served_by = set()
        sent = 0
        deadline = time.monotonic() + 90
        while len(served_by) < SERVED_BY:
            assert time.monotonic() < deadline, f"only {len(served_by)} workers served {sent} requests"
            status, _, body = request(server.port, "GET", f"/v1/games/{game_id}")
            assert status == 200
            sent += 1
            served_by.add(json.loads(body)["pid"])
        wait_until(lambda: len(server.worker_pids()) == WORKERS and healthy(server.port), "the workers")

        route = "/v1/games/<game_id>"
        started = time.perf_counter()
        counted = [requests_counted(server, route) for _ in range(6)]
        scrape_ms = (time.perf_counter() - started) / 6 * 1000
        files = sorted(path.name for path in (tmp_path / "metrics").glob("*.db"))
        print(f"\n{len(served_by)} worker processes served {sent} requests; metric files left: {len(files)} "
              f"(bound {BOUND}); scrape {scrape_ms:.1f} ms; totals {counted}")
        assert counted == [float(sent)] * 6
        assert len(files) <= BOUND, files
        assert {"counter_archive.db", "histogram_archive.db"} <= set(files)
        assert b"Traceback" not in server.log.read_bytes()
    finally:
        server.stop()
