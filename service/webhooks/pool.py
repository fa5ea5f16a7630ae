"""A bounded set of concurrent tasks on long-lived daemon threads.

Bounded, so a burst of events cannot start unbounded connections; as many threads as tasks
can run at once, so a receiver that takes its full timeout holds up only its own delivery;
threads kept between tasks, because starting one costs more CPU than a delivery to a
receiver that answers at once. Daemon threads, so a shutdown that runs out of grace time can
still exit: what was cut off stays held in Redis and comes back when its lease ends.
"""
from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

logger = logging.getLogger(__name__)


class BoundedPool:
    """Runs at most ``size`` tasks at once; ``close`` it to end its threads."""

    def __init__(self, size: int, name: str = "task") -> None:
        if size < 1:
            raise ValueError("a pool needs at least one slot")
        self._size = size
        self._name = name
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a task ended
        self._queued = threading.Condition(self._lock)  # a task is waiting for a thread
        self._tasks: deque[Callable[[], None]] = deque()
        self._running = 0  # submitted and not ended
        self._busy = 0  # threads running a task
        self._threads = 0
        self._closed = False

    def free(self) -> int:
        """Slots free right now."""
        with self._lock:
            return self._size - self._running

    def wait_for_free(self, timeout: float) -> int:
        """Wait up to ``timeout`` s until a slot is free; returns the free slots (maybe 0)."""
        with self._changed:
            self._changed.wait_for(lambda: self._running < self._size, timeout)
            return self._size - self._running

    def running(self) -> int:
        with self._lock:
            return self._running

    def submit(self, task: Callable[[], None]) -> None:
        """Run ``task`` on a pool thread once a slot is free (waits for one). The task's
        exceptions are logged, never raised here."""
        with self._changed:
            self._changed.wait_for(lambda: self._running < self._size)
            self._running += 1
            self._tasks.append(task)
            # Every waiting task has an idle thread of its own: none waits behind a slow one.
            if len(self._tasks) > self._threads - self._busy:
                self._threads += 1
                try:
                    threading.Thread(target=self._serve, name=self._name, daemon=True).start()
                except BaseException:
                    self._threads -= 1
                    self._tasks.pop()
                    self._running -= 1
                    raise
            else:
                self._queued.notify()

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s until no task runs; returns whether none does."""
        with self._changed:
            return self._changed.wait_for(lambda: self._running == 0, timeout)

    def close(self) -> None:
        """Let the threads end once the tasks submitted so far have run."""
        with self._lock:
            self._closed = True
            self._queued.notify_all()

    def _serve(self) -> None:
        while True:
            with self._lock:
                while not self._tasks:
                    if self._closed:
                        self._threads -= 1
                        return
                    self._queued.wait()
                task = self._tasks.popleft()
                self._busy += 1
            try:
                task()
            except Exception:
                logger.exception("%s failed", self._name)
            finally:
                with self._lock:
                    self._busy -= 1
                    self._running -= 1
                    self._changed.notify_all()
