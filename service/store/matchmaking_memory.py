"""Tickets and invites of the embedded store, kept with its games under the same lock, so that a
game and its claims are one step here too (service/store/memory.py applies the claims)."""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field, replace

from service.store.base import Claim
from service.store.matchmaking import (AlreadyOpen, Invite, InviteStatus, InviteStore, KeyReused, RetryKey, Ticket,
                                       TicketStatus, TicketStore, TooManyOpen, closed_as)
from service.store.timers import Timers


@dataclass
class _Held:
    status: str
    version: int
    data: str
    expires_at: float  # time.time() after which it is gone


@dataclass
class Claimables:
    """The embedded store's tickets, invites, queues and pointers (guarded by the store's lock)."""

    held: dict[tuple[str, str], _Held] = field(default_factory=dict)
    queues: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    pointers: dict[str, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    invites_open: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    # (scope, Idempotency-Key name): the first ticket's id and fingerprint, and until when they are kept
    retries: dict[tuple[str, str], tuple[str, float]] = field(default_factory=dict)

    def live(self, kind: str, key: str) -> _Held | None:
        found = self.held.get((kind, key))
        if found is not None and found.expires_at <= time.time():
            del self.held[(kind, key)]
            return None
        return found

    def holds(self, claim: Claim) -> bool:
        found = self.live(claim.kind, claim.id)
        return found is not None and found.status == claim.expect and found.version == claim.version

    def take(self, claim: Claim, timers: Timers) -> None:
        found = self.held[(claim.kind, claim.id)]
        found.status, found.version, found.data = claim.status, claim.version + 1, claim.data
        if claim.queue is not None:
            self.queues[claim.queue].pop(claim.id, None)
        if claim.timer is not None:
            kind, _, subject = claim.timer.partition("|")
            timers.cancel(kind, subject)


class _MemoryClaimables:
    def __init__(self, store) -> None:
        self._store = store  # a MemoryStore: its lock, its condition, its claimables, its timers

    @property
    def _table(self) -> Claimables:
        return self._store.claimables

    def _read(self, kind: str, key: str):
        with self._store._lock:
            found = self._table.live(kind, key)
            return None if found is None else (found.status, found.version, found.data)

    def _wait(self, kind: str, key: str, seen_version: int, timeout: float, read):
        deadline = time.monotonic() + timeout
        with self._store._changed:
            while True:
                found = self._table.live(kind, key)
                if found is None or found.version > seen_version:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._store._changed.wait(left)
        return read()

    def _put(self, kind: str, key: str, status: str, data: str, expires_at: float) -> str | None:
        found = self._table.live(kind, key)
        if found is not None:
            return found.data
        self._table.held[(kind, key)] = _Held(status, 1, data, expires_at)
        return None

    def _replace(self, kind: str, key: str, expect: str, version: int, changed) -> bool:
        """Hold ``changed`` instead of the item, if it is still at ``expect`` and ``version``."""
        with self._store._changed:
            found = self._table.live(kind, key)
            if found is None or found.status != expect or found.version != version:
                return False
            found.status, found.version, found.data = changed.status, changed.version, changed.dump()
            self._store._changed.notify_all()
        return True

    def _close(self, kind: str, key: str, expect: str, item, status: str):
        closed = closed_as(item, status)
        if not self._replace(kind, key, expect, item.version, closed):
            return None
        self._store.timers.cancel(kind, key)
        return closed


class MemoryTickets(_MemoryClaimables, TicketStore):
    def open(self, ticket: Ticket, max_open: int, keep_seconds: int, retry: RetryKey | None = None) -> Ticket:
        first = f"{ticket.id} {ticket.fingerprint}"
        with self._store._changed:
            if retry is not None:
                kept = self._table.retries.get((ticket.scope, retry.name))
                if kept is not None and kept[1] > time.time() and kept[0] != first:
                    raise KeyReused()
            pointers = self._table.pointers[ticket.scope]
            held = pointers.get(ticket.player.external_id)
            if held is not None and held != ticket.id:
                found = self._table.live("ticket", held)
                if found is not None and found.status == TicketStatus.WAITING:
                    raise AlreadyOpen(held)
            if held is None and len(pointers) >= max_open:
                for player, ticket_id in list(pointers.items()):
                    found = self._table.live("ticket", ticket_id)
                    if found is None or found.status != TicketStatus.WAITING:
                        del pointers[player]
                if len(pointers) >= max_open:
                    raise TooManyOpen()
            pointers[ticket.player.external_id] = ticket.id
            if retry is not None:
                self._table.retries[(ticket.scope, retry.name)] = (first, time.time() + retry.seconds)
            kept = self._put("ticket", ticket.id, TicketStatus.WAITING, ticket.dump(), ticket.expires_at + keep_seconds)
            if kept is not None:
                return self._parse(self._table.live("ticket", ticket.id))
            self._table.queues[ticket.queue][ticket.id] = ticket.created_at
        self._store.timers.set("ticket", ticket.id, min(at for at in (ticket.expires_at, ticket.bot_at)
                                                        if at is not None))
        return ticket

    def get(self, ticket_id: str) -> Ticket | None:
        with self._store._lock:
            return self._parse(self._table.live("ticket", ticket_id))

    def wait(self, ticket_id: str, seen_version: int, timeout: float) -> Ticket | None:
        return self._wait("ticket", ticket_id, seen_version, timeout, lambda: self.get(ticket_id))

    def waiting(self, queue: str, limit: int) -> list[Ticket]:
        with self._store._lock:
            members = sorted(self._table.queues.get(queue, {}).items(), key=lambda item: (item[1], item[0]))
            found = []
            for ticket_id, _ in members:
                ticket = self._parse(self._table.live("ticket", ticket_id))
                if ticket is None or ticket.status != TicketStatus.WAITING:
                    self._table.queues[queue].pop(ticket_id, None)
                elif len(found) < limit:
                    found.append(ticket)
            return found

    def close(self, ticket_id: str, status: str) -> Ticket | None:
        while True:
            ticket = self.get(ticket_id)
            if ticket is None or ticket.status != TicketStatus.WAITING:
                return ticket
            closed = self._close("ticket", ticket_id, TicketStatus.WAITING, ticket, status)
            if closed is not None:
                with self._store._lock:
                    self._table.queues[ticket.queue].pop(ticket_id, None)
                return closed

    def release_player(self, ticket: Ticket) -> None:
        with self._store._lock:
            pointers = self._table.pointers[ticket.scope]
            if pointers.get(ticket.player.external_id) == ticket.id:
                del pointers[ticket.player.external_id]

    @staticmethod
    def _parse(found: _Held | None) -> Ticket | None:
        return None if found is None else replace(Ticket.parse(found.data), status=found.status,
                                                  version=found.version)


class MemoryInvites(_MemoryClaimables, InviteStore):
    def open(self, invite: Invite, max_open: int, keep_seconds: int) -> Invite:
        with self._store._changed:
            counted = self._table.invites_open[invite.scope]
            now = time.time()
            for code in [code for code, expires_at in counted.items() if expires_at <= now]:
                del counted[code]
            existing = self._table.live("invite", invite.code)
            if existing is not None:
                return self._parse(existing)
            if len(counted) >= max_open:
                raise TooManyOpen()
            self._put("invite", invite.code, InviteStatus.OPEN, invite.dump(), invite.expires_at + keep_seconds)
            counted[invite.code] = invite.expires_at
        self._store.timers.set("invite", invite.code, invite.expires_at)
        return invite

    def get(self, code: str) -> Invite | None:
        with self._store._lock:
            return self._parse(self._table.live("invite", code))

    def wait(self, code: str, seen_version: int, timeout: float) -> Invite | None:
        return self._wait("invite", code, seen_version, timeout, lambda: self.get(code))

    def close(self, code: str, status: str) -> Invite | None:
        while True:
            invite = self.get(code)
            if invite is None or invite.status != InviteStatus.OPEN:
                return invite
            closed = self._close("invite", code, InviteStatus.OPEN, invite, status)
            if closed is not None:
                self.release(closed)
                return closed

    def seat(self, invite: Invite, seated: Invite) -> bool:
        return self._replace("invite", invite.code, InviteStatus.OPEN, invite.version, seated)

    def release(self, invite: Invite) -> None:
        with self._store._lock:
            self._table.invites_open[invite.scope].pop(invite.code, None)

    @staticmethod
    def _parse(found: _Held | None) -> Invite | None:
        return None if found is None else replace(Invite.parse(found.data), status=found.status,
                                                  version=found.version)

