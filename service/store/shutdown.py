"""The process's shutdown, as its waiters see it: once ``stop_waiting`` is called, every
waiting long-poll and stream answers with what it has, and every later one at once.

The gunicorn worker calls ``stop_waiting`` when it retires or stops; whatever holds waiters
(the Redis notifiers, service/store/notify.py; the embedded store) registers with
``wake_on_stop``."""
from __future__ import annotations

import weakref
from typing import Any

from service.store.base import Wake

# What stop_waiting wakes, each with a ``wake_all(Wake)``; weakly, so that registering keeps
# no store alive.
_holders: weakref.WeakSet = weakref.WeakSet()
_stopping = False


def wake_on_stop(holder: Any) -> None:
    """Have ``stop_waiting`` call ``holder.wake_all(Wake.SHUTDOWN)`` (kept weakly)."""
    _holders.add(holder)


def stopping() -> bool:
    """Whether the process has begun to shut down (``stop_waiting`` was called)."""
    return _stopping


def stop_waiting() -> None:
    """The process is shutting down: wake every waiter (its long-poll answers with what it
    has, usually nothing) and let later ones answer at once."""
    global _stopping
    _stopping = True
    for holder in list(_holders):
        holder.wake_all(Wake.SHUTDOWN)
