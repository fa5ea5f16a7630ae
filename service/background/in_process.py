"""The background work of a process on the embedded store, which nothing else can reach: one
thread that runs the runner whenever the store's activity changes (a feed entry, a timer set)
or a timer comes due.

The thread holds the runner only weakly between rounds: when the app that owns it is gone
(tests build many), the thread ends at its next wake-up instead of keeping it alive. Each
round runs in the context the app's ``context`` method opens (its application context: the
use cases count what they do, a match made by a timer too, in the app's metrics), held
weakly the same way.
"""
from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager

from service.background.runner import Runner
from service.store.memory_activity import Activity

logger = logging.getLogger(__name__)

# Without activity or a timer, the loop looks again this often (and ends if its app is gone).
IDLE_SECONDS = 30.0


def run_in_process(runner: Runner, activity: Activity,
                   context: Callable[[], AbstractContextManager]) -> threading.Thread:
    """Start the loop; it stops with ``runner.stop()`` or when the runner, or the owner of the
    bound method ``context``, is collected."""
    held = weakref.ref(runner)
    held_context = weakref.WeakMethod(context)

    def loop() -> None:
        while True:
            current, opened = held(), held_context()
            if current is None or current.stopped or opened is None:
                return
            seen = activity.count
            try:
                with opened():
                    current.run_once()
            except Exception:  # noqa: BLE001 - the next round tries again
                logger.exception("background round failed")
            hint = current.timers.wait_hint()
            del current, opened
            activity.wait_past(seen, IDLE_SECONDS if hint is None else min(hint, IDLE_SECONDS))

    thread = threading.Thread(target=loop, name="background", daemon=True)
    thread.start()
    return thread
