"""One viewer's live stream of a match: its view, then every new event as ``/events`` shows it
to that viewer, presence changes, and a heartbeat while nothing happens.

``open_stream`` does everything that may refuse the stream before it starts (the waiter's
place, the game, the token, the resume point), so that a refusal is an ordinary problem
answer; ``MatchStream.messages`` then runs until the match is over, the process stops, or the
client leaves. It waits on the store's ``Follow`` of the game, which costs the store nothing
while nothing happens; on a wake-up it takes the game's latest read from the tail it shares
with the process's other streams of that game (``tails.py``: the game, which settles a turn
deadline that passed as every read does, and the new events; two round trips per change and
process). A turn deadline or the end of a seat's recent-action window that falls due while
it waits wakes it too, so a timeout is played and streamed without a worker.

Presence changes are not events of the match: they have no sequence number, are not stored,
and a stream sends one only when a seat's presence differs from what it last told its client
(the view sent first included). A player's own stream holds its seat present while it is open.
"""
from __future__ import annotations

import random
import time
from collections.abc import Iterator, Set
from contextlib import ExitStack
from dataclasses import dataclass

from service import rules
from service.games.commit import deadline_of, seat_of
from service.games.errors import ConcurrentChange, Unprocessable
from service.games.presence import next_change, online_seats
from service.games.record import Record
from service.games.service import SETTLE_SPREAD, GameService
from service.games.tails import Tail, tails_of
from service.store.base import Follow, GameMissing, Wake
from service.store.errors import StoreError

@dataclass(frozen=True)
class View:
    """The viewer's view; ``resume_at``: the event after which the stream goes on."""

    body: dict
    resume_at: int


@dataclass(frozen=True)
class Shown:
    """An event as the viewer may see it."""

    seq: int
    type: str
    body: dict


@dataclass(frozen=True)
class PresenceChange:
    seat: int
    online: bool


@dataclass(frozen=True)
class Quiet:
    """Nothing happened for a heartbeat's interval."""


@dataclass(frozen=True)
class MatchOver:
    """The stream's last message: the match is over, with its result as the view shows it."""

    body: dict


Message = View | Shown | PresenceChange | Quiet | MatchOver


def open_stream(games: GameService, game_id: str, token: str | None, resume: int | None) -> MatchStream | None:
    """A stream of ``game_id`` for the token's seat (or the public), after event ``resume``
    (None: from now, after the view). None when there is nothing to stream: the match is
    over and the client has every event (a client reconnecting after the end).

    Raises LongPollCapacity, StoreError, GameMissing/GameExpired, Unauthorized,
    Unprocessable (a resume point past the last event)."""
    store = games.ctx.store
    held = ExitStack()
    try:
        follow = held.enter_context(store.following(game_id, resume or 0))
        loaded, record = games.current(game_id, present=True)
        viewer = None if token is None else seat_of(record, token)
        last = record.match.event_count
        if resume is not None and resume > last:
            raise Unprocessable(f"the match has {last} events: there is no event {resume} to resume after "
                                "(Last-Event-ID or after)", params={"last_seq": last})
        if record.match.is_finished and resume is not None and resume >= last:
            held.close()
            return None
        follow.after = last if resume is None else resume
        own = frozenset()
        if viewer is not None:
            held.enter_context(store.holding(game_id, viewer))
            own = frozenset((viewer,))
        tails = tails_of(games)
        tail = tails.take(games, game_id)
        held.callback(tails.give_back, tail, game_id)
        return MatchStream(games, game_id, viewer, own, follow, tail, record, loaded.present | own, held)
    except BaseException:
        held.close()
        raise


class MatchStream:
    """What ``open_stream`` holds: iterate ``messages()`` once; it lets go when that ends."""

    def __init__(self, games: GameService, game_id: str, viewer: int | None, own: frozenset[int],
                 follow: Follow, tail: Tail, record: Record, present: Set[int], held: ExitStack) -> None:
        self._games = games
        self._game_id = game_id
        self._viewer = viewer
        self._own = own
        self._follow = follow
        self._tail = tail
        self._opened_at = time.monotonic()
        self._record = record
        self._present = present
        self._held = held
        self._told = online_seats(record, present, games.ctx.now())
        self._sent_at = self._opened_at
        # A finished match: the events after the resume point (if any), then the end.
        self._over = record.match.is_finished

    def messages(self) -> Iterator[Message]:
        """The view, the events after the resume point, then whatever happens, until the match is
        over (its ``match_finished`` sent, then ``MatchOver``) or the process stops. Raises
        requester.ClientGone."""
        try:
            yield View(self._games.shown(self._game_id, self._record, self._viewer, self._present), self._follow.after)
            if self._record.match.event_count > self._follow.after:
                yield from self._refresh(self._opened_at)
            heartbeat = self._games.ctx.settings.stream_heartbeat_seconds
            self._sent_at = time.monotonic()
            while not self._over:
                due = self._due()
                wake = self._follow.wait(min(self._sent_at + heartbeat, due))
                if wake is Wake.SHUTDOWN:
                    return
                now = time.monotonic()
                if wake is None and now >= self._sent_at + heartbeat:
                    yield Quiet()
                    self._sent_at = now
                if wake is not None or now >= due:
                    try:
                        yield from self._refresh(self._follow.woken_at if wake is not None else now)
                    except ConcurrentChange:
                        pass  # settling a deadline kept losing races: the winners' events wake it
            # Only the end of the match leaves the loop (a stop returns from it).
            yield MatchOver({"game_id": self._game_id, "status": self._record.match.status.value,
                             "result": self._record.shown_result()})
        except (GameMissing, StoreError):
            return  # the match is gone, or the store is away: a client that reconnects is told which
        finally:
            self._held.close()

    def close(self) -> None:
        """Let go of what the stream holds (also when ``messages`` never ran)."""
        self._held.close()

    def _due(self) -> float:
        """When the stream must read the game although nothing woke it (time.monotonic()): a
        turn deadline (spread, as the long-polls' are) or the end of a recent-action window."""
        now, clock = time.monotonic(), self._games.ctx.now()
        times = []
        deadline = deadline_of(self._record.match)
        if deadline is not None:
            times.append(now + max(deadline - clock, 0.0) + random.uniform(0, SETTLE_SPREAD))
        window_end = next_change(self._record, self._present, clock)
        if window_end is not None:
            times.append(now + window_end - clock)
        return min(times, default=float("inf"))

    def _refresh(self, since: float) -> Iterator[Message]:
        """What changed, from a read of the game begun at ``since`` or later."""
        read, events = self._tail.latest(self._follow.after, since)
        self._record, self._present = read.record, read.present | self._own
        for event in events:
            shown = rules.shown_event(event, self._viewer)
            self._follow.after = event.seq
            self._sent_at = time.monotonic()
            yield Shown(event.seq, shown["type"], shown)
            if event.type is rules.EventType.MATCH_FINISHED:
                self._over = True
        online = online_seats(self._record, self._present, self._games.ctx.now())
        for seat, (was, now) in enumerate(zip(self._told, online)):
            if was != now:
                self._sent_at = time.monotonic()
                yield PresenceChange(seat, now)
        self._told = online
