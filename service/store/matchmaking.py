"""The matchmaking port: quick-play tickets in their queues, and invites.

A queue (one API key, variant, rules and ``rated``) lives in one shard (``queue_shard``), with
its tickets (their ids are placed in that shard's slot, service/ids.py), their timers, and the
games it makes (drawn in the same shard): the match and the claim of every ticket it seats are
one atomic step (``GameStore.create`` with ``Effects.claims``), so a ticket is matched at most
once and never points to a match that does not exist, on a single Redis and on a cluster. An
invite lives in the shard its code names, and its match is created the same way.

A player's open ticket (one per API key) is kept in the key's own slot: a pointer to the
ticket, taken before the ticket is stored and checked against the ticket itself, so a pointer
left behind by a crash is replaced rather than believed (on Redis, once it is older than a
request could still be storing its ticket).
"""
from __future__ import annotations

import abc
import hashlib
import json
from dataclasses import asdict, dataclass, replace

from service import ids


class TicketStatus:
    WAITING = "waiting"
    MATCHED = "matched"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


class InviteStatus:
    OPEN = "open"
    ACCEPTED = "accepted"
    WITHDRAWN = "withdrawn"
    EXPIRED = "expired"


@dataclass(frozen=True)
class Player:
    external_id: str
    name: str
    metadata: dict | None = None


@dataclass(frozen=True)
class Ticket:
    """A quick-play ticket. Times are epoch seconds; ``version`` grows with every change (its
    long-poll waits for a version past the one it saw)."""

    id: str
    scope: str
    queue: str
    player: Player
    variant: str
    rules: dict
    rated: bool
    rating: float | None
    bot_after: int | None
    callback_url: str | None
    created_at: float
    expires_at: float
    fingerprint: str = ""
    status: str = TicketStatus.WAITING
    game_id: str | None = None
    seat: int | None = None
    version: int = 1

    @property
    def bot_at(self) -> float | None:
        return None if self.bot_after is None else self.created_at + self.bot_after

    def dump(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def parse(cls, text: str) -> Ticket:
        data = json.loads(text)
        return cls(**{**data, "player": Player(**data["player"])})


@dataclass(frozen=True)
class Invite:
    """An invite; ``guests`` are those who accepted, in seat order after the host (a box invite
    seats its first guest while it waits for the second)."""

    code: str
    scope: str
    host: Player
    variant: str
    rules: dict
    rated: bool
    created_at: float
    expires_at: float
    fingerprint: str = ""
    status: str = InviteStatus.OPEN
    game_id: str | None = None
    guests: tuple[Player, ...] = ()
    version: int = 1

    def dump(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def parse(cls, text: str) -> Invite:
        data = json.loads(text)
        if "guest" in data:  # kept by 1.x before box invites: one guest, or none yet
            guest = data.pop("guest")
            data["guests"] = [] if guest is None else [guest]
        guests = tuple(Player(**guest) for guest in data["guests"])
        return cls(**{**data, "host": Player(**data["host"]), "guests": guests})


def queue_id(scope: str, variant: str, rules: dict, rated: bool) -> str:
    """The queue of tickets that may be paired with each other."""
    canonical = json.dumps([scope, variant, rules, rated], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:24]


def queue_shard(queue: str) -> int:
    return ids.shard_of_name(queue)


def invite_shard(code: str) -> int:
    return ids.shard_of_name(code)


class AlreadyOpen(Exception):
    """The player has an open ticket already (its id is ``ticket_id``)."""

    def __init__(self, ticket_id: str) -> None:
        super().__init__(ticket_id)
        self.ticket_id = ticket_id


class TooManyOpen(Exception):
    """The API key holds its maximum of open tickets or invites."""


class KeyReused(Exception):
    """The Idempotency-Key was used for another request (another fingerprint)."""


@dataclass(frozen=True)
class RetryKey:
    """An Idempotency-Key as the store keeps it: ``name`` (a MAC of the key and its API key's
    scope: no client text), remembered ``seconds``."""

    name: str
    seconds: int


class TicketStore(abc.ABC):
    """Every method raises StoreError when the backend fails."""

    @abc.abstractmethod
    def open(self, ticket: Ticket, max_open: int, keep_seconds: int, retry: RetryKey | None = None) -> Ticket:
        """Queue ``ticket`` (and set its timer at ``timer_at``) unless a ticket with its id exists:
        then return that one, unchanged. With ``retry``, the first request under it is kept (its
        ticket's id and fingerprint) in the same step as the player's pointer. Raises KeyReused
        (``retry`` came with another fingerprint before: nothing changes), AlreadyOpen (the
        player has another waiting ticket), TooManyOpen (the key has ``max_open``)."""

    @abc.abstractmethod
    def get(self, ticket_id: str) -> Ticket | None: ...

    @abc.abstractmethod
    def wait(self, ticket_id: str, seen_version: int, timeout: float) -> Ticket | None:
        """The ticket once its version is past ``seen_version``, or as it is after ``timeout``."""

    @abc.abstractmethod
    def waiting(self, queue: str, limit: int) -> list[Ticket]:
        """The oldest ``limit`` waiting tickets of ``queue``, oldest first."""

    @abc.abstractmethod
    def close(self, ticket_id: str, status: str) -> Ticket | None:
        """Move a waiting ticket to ``status`` (cancelled, expired): out of its queue, its timer
        gone. Returns the ticket as it is after (unchanged when it was not waiting)."""

    @abc.abstractmethod
    def release_player(self, ticket: Ticket) -> None:
        """Forget the player's pointer to ``ticket`` (it no longer waits)."""


class InviteStore(abc.ABC):
    @abc.abstractmethod
    def open(self, invite: Invite, max_open: int, keep_seconds: int) -> Invite:
        """Store a new invite unless its code exists (then return that one). Raises TooManyOpen."""

    @abc.abstractmethod
    def get(self, code: str) -> Invite | None: ...

    @abc.abstractmethod
    def wait(self, code: str, seen_version: int, timeout: float) -> Invite | None: ...

    @abc.abstractmethod
    def close(self, code: str, status: str) -> Invite | None:
        """Move an open invite to ``status`` (withdrawn, expired); the invite as it is after."""

    @abc.abstractmethod
    def seat(self, invite: Invite, seated: Invite) -> bool:
        """Replace ``invite`` by ``seated`` (a guest more, one version later, still open) iff it
        is still open at ``invite.version``; wakes its waiters. False: it changed meanwhile."""

    @abc.abstractmethod
    def release(self, invite: Invite) -> None:
        """The invite no longer counts among its key's open ones (it was accepted)."""


def closed_as(item, status: str):
    """A ticket or invite moved on to ``status``, one version later."""
    return replace(item, status=status, version=item.version + 1)
