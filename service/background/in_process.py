"""The background work of a process on the embedded store, which nothing else can reach: one
thread that runs the runner whenever the store's activity changes (a feed entry, a timer set)
or a timer comes due.

The thread holds the runner and its app only weakly between rounds: when the app that owns
them is gone (tests build many), the thread ends at its next wake-up instead of keeping it
alive. Each round runs in the app's context, as a request does: what the use cases report
(service/observability: a match made by a timer, say) is counted in this app's metrics.
"""
from __future__ import annotations

import logging
import threading
import weakref

from flask import Flask

from service.background.runner import Runner
from service.store.memory_activity import Activity

logger = logging.getLogger(__name__)

# Without activity or a timer, the loop looks again this often (and ends if its app is gone).
IDLE_SECONDS = 30.0


def run_in_process(runner: Runner, activity: Activity, app: Flask) -> threading.Thread:
    """Start the loop; it stops with ``runner.stop()`` or when the runner or ``app`` is collected."""
    held, held_app = weakref.ref(runner), weakref.ref(app)

    def loop() -> None:
        while True:
            current, owner = held(), held_app()
            if current is None or owner is None or current.stopped:
                return
            seen = activity.count
            try:
                with owner.app_context():
                    current.run_once()
            except Exception:  # noqa: BLE001 - the next round tries again
                logger.exception("background round failed")
            hint = current.timers.wait_hint()
            del current, owner
            activity.wait_past(seen, IDLE_SECONDS if hint is None else min(hint, IDLE_SECONDS))

    thread = threading.Thread(target=loop, name="background", daemon=True)
    thread.start()
    return thread
