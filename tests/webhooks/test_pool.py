"""The worker's task pool: bounded, long-lived threads, none waiting behind a slow task."""
from __future__ import annotations

import threading
import time

import pytest

from service.webhooks.pool import BoundedPool
from tests.webhooks.support import wait_until

pytestmark = pytest.mark.timeout(30)


def test_tasks_run_on_threads_kept_between_them() -> None:
    pool = BoundedPool(4, "test-task")
    threads: list[int] = []
    for _ in range(20):
        pool.submit(lambda: threads.append(threading.get_ident()))
        assert pool.wait_idle(5)
    assert len(threads) == 20 and len(set(threads)) == 1
    pool.close()


def test_at_most_size_tasks_run_and_a_slow_one_holds_up_none_of_the_others() -> None:
    pool = BoundedPool(3, "test-task")
    release = threading.Event()
    done: list[int] = []
    pool.submit(release.wait)
    pool.submit(release.wait)
    pool.submit(lambda: done.append(1))  # the third slot: runs although two tasks hang
    wait_until(lambda: done == [1], timeout=5, what="the third task ran")
    assert pool.running() == 2 and pool.free() == 1
    pool.submit(release.wait)
    assert pool.free() == 0 and pool.wait_for_free(0.1) == 0
    waiting = threading.Thread(target=pool.submit, args=(lambda: done.append(2),))
    waiting.start()
    time.sleep(0.2)
    assert done == [1]  # no slot: the submit waits
    release.set()
    waiting.join(5)
    assert pool.wait_idle(5) and done == [1, 2]
    pool.close()


def test_a_failing_task_is_logged_and_its_thread_goes_on(caplog) -> None:
    pool = BoundedPool(1, "test-task")
    done = threading.Event()
    pool.submit(lambda: 1 / 0)
    pool.submit(done.set)
    assert done.wait(5) and pool.wait_idle(5)
    assert "test-task failed" in caplog.text
    pool.close()


def test_close_ends_the_threads_once_the_tasks_ran() -> None:
    # Counted by name: other tests in this process may start or end threads meanwhile.
    def pool_threads() -> int:
        return sum(1 for thread in threading.enumerate() if thread.name == "test-task-closing")

    pool = BoundedPool(4, "test-task-closing")
    gate = threading.Event()
    for _ in range(4):
        pool.submit(gate.wait)
    assert pool_threads() == 4
    pool.close()
    gate.set()
    assert pool.wait_idle(5)
    wait_until(lambda: pool_threads() == 0, timeout=5, what="threads ended")
