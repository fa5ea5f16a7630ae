"""Timers: work that must happen at a time, whoever is running then.

A timer is a (kind, subject) pair due at a time: ``deadline`` + a game id (its turn deadline),
``ticket`` + a ticket id (its bot fallback, its rating gap widening, its expiry), ``invite`` +
an invite code (its expiry), ... Setting a
timer again moves it. The worker process (and, on the embedded store, the process itself)
claims what is due under a lease and hands each to the handler of its kind
(service/background); a runner that dies lets its claims come due again when the lease ends,
so a timer fires at least once, and handlers are written so that firing twice changes nothing
the second time.

A game's turn deadline is set and cleared by the save that changes the game, in the same
atomic step; a request that loads the game settles a deadline that passed too, so the timer
may find nothing left to do.
"""
from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass

from service import ids

SEPARATOR = "|"
# The kind of a game's turn deadline (subject: the game id).
DEADLINE_TIMER = "deadline"
# Told of each fired timer of a known kind: the kind, and whether its handler succeeded (the
# worker's metrics).
TimerCount = Callable[[str, bool], None]


@dataclass(frozen=True)
class Timer:
    """A claimed timer: ``lease`` is the score its claim set, which releasing it checks."""

    kind: str
    subject: str
    lease: float = 0.0

    @property
    def member(self) -> str:
        return f"{self.kind}{SEPARATOR}{self.subject}"

    @classmethod
    def from_member(cls, member: str, lease: float) -> Timer:
        kind, _, subject = member.partition(SEPARATOR)
        return cls(kind, subject, lease)


def shard_of_subject(subject: str) -> int:
    """The shard whose schedule holds ``subject``'s timers: its own for an id placed in a shard
    (games, tickets), else one chosen by its hash."""
    shard = ids.shard_of(subject)
    return shard if shard is not None else ids.shard_of_name(subject)


class Timers(abc.ABC):
    """Every method raises StoreError when the backend fails."""

    @abc.abstractmethod
    def set(self, kind: str, subject: str, at: float) -> None:
        """Fire ``kind`` for ``subject`` at ``at`` (epoch seconds), replacing an earlier time."""

    @abc.abstractmethod
    def cancel(self, kind: str, subject: str) -> None:
        """Forget the timer, if any."""

    @abc.abstractmethod
    def claim_due(self, now: float, lease_until: float, count: int) -> list[Timer]:
        """Up to ``count`` timers due at ``now``, each now due again at ``lease_until`` (if its
        claimer dies, it fires again then)."""

    @abc.abstractmethod
    def release(self, timer: Timer) -> None:
        """A fired timer is done: remove it, unless it was set again since its claim."""

    def wait_hint(self) -> float | None:
        """Seconds until something may be due, if the store can tell without asking a server;
        None: poll."""
        return None
