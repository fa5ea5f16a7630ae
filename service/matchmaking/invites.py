"""Invites: play a friend by a code to read out (docs/api.md, "Invites").

A code is 8 characters of Crockford's base32 (``0-9`` and ``A-Z`` without ``I``, ``L``, ``O``
and ``U``): 40 random bits, and it reads back whatever the case and with ``O`` for ``0`` and
``I``/``L`` for ``1``, so the letters that look alike cannot be mistaken. The acceptance that
takes the last seat creates the match and uses the invite in one atomic step (the game's id is
derived from the invite and put in the invite's shard): an invite is used once, and nobody
learns of a match that does not exist. A box invite seats its first guest in the open invite
(one compare-and-set) and waits for the second. Accepting is rate limited per API key, so codes
cannot be guessed by trying them.
"""
from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace

from service import ids, rules
from service.games.context import Context
from service.games.create import NewSeat, Seating, create_seated, current_token, seat_token
from service.games.errors import TooMany
from service.matchmaking.errors import LimitReached, Missing, StateConflict
from service.store.base import Claim, ClaimLost
from service.store.matchmaking import Invite, InviteStatus, InviteStore, Player, TooManyOpen, invite_shard
from service.store.timers import Timer, Timers

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
CODE_LENGTH = 8
# What a person may read or type for a character that looks like another.
LOOK_ALIKES = str.maketrans({"O": "0", "I": "1", "L": "1"})
TOKEN_LABEL = "invite"
HOST_SEAT = 0
ACCEPT_WINDOW_SECONDS = 60
# Codes drawn for one invite before giving up: a drawn code is taken with a chance of (open
# invites) / 2**40, so a second draw is already rare and a fifth never happens.
CODE_ATTEMPTS = 5


@dataclass(frozen=True)
class InviteSettings:
    max_open: int = 10_000
    max_expires_in: int = 7 * 86400
    keep_seconds: int = 3600
    accepts_per_minute: int = 60


@dataclass(frozen=True)
class NewInvite:
    host: Player
    variant: str
    rules: dict | None = None
    rated: bool = False
    expires_in: int = 86400


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normal_code(text: str) -> str | None:
    """The code as this service writes it, or None for text that cannot be one."""
    code = text.strip().upper().replace("-", "").translate(LOOK_ALIKES)
    return code if len(code) == CODE_LENGTH and all(c in ALPHABET for c in code) else None


class Invites:
    def __init__(self, ctx: Context, invites: Callable[[], InviteStore], timers: Callable[[], Timers],
                 settings: InviteSettings) -> None:
        self.ctx = ctx
        self._invites = invites
        self._timers = timers
        self.settings = settings

    def open(self, owner: str | None, new: NewInvite) -> Invite:
        """Raises InvalidInput (rules), LimitReached, StoreError."""
        scope = self.ctx.scope_of(owner)
        match_rules = rules.rules_for(new.variant, new.rules).as_dict()
        now = self.ctx.now()
        for _ in range(CODE_ATTEMPTS):
            invite = Invite(new_code(), scope, new.host, new.variant, match_rules, new.rated, now,
                            now + new.expires_in)
            try:
                kept = self._invites().open(invite, self.settings.max_open, self.settings.keep_seconds)
            except TooManyOpen:
                raise LimitReached(f"this API key holds {self.settings.max_open} open invites",
                                   code="invite_limit_reached", params={"limit": self.settings.max_open}) from None
            if kept == invite:
                return kept
            # The code is another invite's (the store keeps the first): draw another.
        raise RuntimeError(f"{CODE_ATTEMPTS} invite codes drawn were all taken")

    def read(self, owner: str | None, code: str, wait: float) -> tuple[Invite, str | None]:
        """The invite (waiting up to ``wait`` s, at most the server's longest long-poll, while it
        is open) and, once accepted, the host's token (None once re-issued). Raises Missing
        (invite_not_found), StoreError."""
        invite = self._owned(owner, code)
        wait = min(wait, self.ctx.settings.long_poll_max_seconds)
        if invite.status == InviteStatus.OPEN and wait > 0:
            invite = self._invites().wait(invite.code, invite.version, wait) or invite
        return invite, self._token(invite, HOST_SEAT)

    def withdraw(self, owner: str | None, code: str) -> None:
        """Raises Missing, StateConflict (invite_accepted), StoreError."""
        invite = self._owned(owner, code)
        after = self._invites().close(invite.code, InviteStatus.WITHDRAWN)
        if after is not None and after.status == InviteStatus.ACCEPTED:
            raise StateConflict("this invite was accepted: its match is under way", code="invite_accepted",
                                params={"game_id": after.game_id})

    def accept(self, owner: str | None, code: str, guest: Player) -> tuple[Invite, int, str | None]:
        """Take a seat: the guests sit after the host (seat 0) in the order they accepted; the
        one who takes the last seat creates the match. Returns the invite as it stands, the
        guest's seat and token (None while the invite waits for another guest); the same guest
        asking again is answered the same. Raises TooMany (rate_limited), Missing
        (invite_not_found: unknown, another key's, used by others, withdrawn or expired),
        StateConflict (own_invite: the host, or a seated guest's id with other details),
        StoreError."""
        self._count_accept(owner)
        invite = self._owned(owner, code)
        while True:
            still_open = invite.status == InviteStatus.OPEN and invite.expires_at > self.ctx.now()
            if guest in invite.guests and (still_open or invite.status == InviteStatus.ACCEPTED):
                seat = guest_seat(invite, guest)
                return invite, seat, self._token(invite, seat)
            if not still_open:
                raise Missing("this invite is used, withdrawn or expired", code="invite_not_found")
            if guest.external_id in {invite.host.external_id, *(seated.external_id for seated in invite.guests)}:
                raise StateConflict("this player holds a seat of this invite already (the host cannot accept "
                                    "their own invite)", code="own_invite")
            seated = replace(invite, guests=(*invite.guests, guest), version=invite.version + 1)
            try:
                if len(seated.guests) < rules.SEATS[invite.variant] - 1:
                    if not self._invites().seat(invite, seated):
                        raise ClaimLost(invite.code)
                    return seated, guest_seat(seated, guest), None
                accepted = self._create(seated)
            except ClaimLost:
                invite = self._owned(owner, code)
                continue
            self._invites().release(accepted)
            seat = guest_seat(accepted, guest)
            return accepted, seat, self._token(accepted, seat)

    def on_timer(self, code: str) -> None:
        """An invite's expiry is due."""
        invite = self._invites().get(code)
        if invite is None or invite.status != InviteStatus.OPEN:
            return
        if self.ctx.now() >= invite.expires_at:
            self._invites().close(code, InviteStatus.EXPIRED)
        else:  # fired early (clocks of two processes apart): at its time again
            self._timers().set("invite", code, invite.expires_at)

    def _create(self, seated: Invite) -> Invite:
        """The match of ``seated`` (every seat taken; one version past the invite as read)."""
        shard = invite_shard(seated.code)
        # Of this invite, not only of its code: a code drawn again once an invite is gone must not
        # lead to that invite's match, which may live on.
        game_id = ids.derived_game_id(self.ctx.secret().mac("invite", seated.code, repr(seated.created_at)), "invite",
                                      shard)
        people = (seated.host, *seated.guests)
        seats = tuple(NewSeat(person.name, None, person.external_id, person.metadata) for person in people)
        owner = None if seated.scope == "-" else seated.scope
        seating = Seating(seated.variant, seats, seated.rules, owner, seated.rated, None, TOKEN_LABEL)
        accepted = replace(seated, status=InviteStatus.ACCEPTED, game_id=game_id)
        claim = Claim("invite", seated.code, seated.version - 1, InviteStatus.OPEN, InviteStatus.ACCEPTED,
                      accepted.dump(), None, Timer("invite", seated.code).member)
        made = create_seated(self.ctx, game_id, seating, (claim,))
        if [(name, seat.external_id, seat.metadata) for name, seat in zip(made.match.names, made.seats)] != [
                (person.name, person.external_id, person.metadata) for person in people]:
            # The code's match exists already, made by another acceptance that came first: this
            # one's claim was never checked, and the seats (and their tokens) are other players'.
            raise ClaimLost(game_id)
        return accepted

    def _count_accept(self, owner: str | None) -> None:
        limit = self.settings.accepts_per_minute
        if limit and self.ctx.store.count(f"accept:{self.ctx.scope_of(owner)}", ACCEPT_WINDOW_SECONDS) > limit:
            reset = max(1, int(ACCEPT_WINDOW_SECONDS - self.ctx.now() % ACCEPT_WINDOW_SECONDS))
            raise TooMany(f"at most {limit} invite acceptances per minute", reset, params={"limit": limit})

    def _owned(self, owner: str | None, code: str) -> Invite:
        normal = normal_code(code)
        invite = None if normal is None else self._invites().get(normal)
        if invite is None or invite.scope != self.ctx.scope_of(owner):
            raise Missing("no invite with this code for this API key", code="invite_not_found")
        return invite

    def _token(self, invite: Invite, seat: int) -> str | None:
        if invite.status != InviteStatus.ACCEPTED:
            return None
        return current_token(self.ctx, invite.game_id, seat, seat_token(self.ctx, invite.game_id, TOKEN_LABEL, seat))


def guest_seat(invite: Invite, guest: Player) -> int:
    """The seat of ``guest``, one of the invite's guests (after the host's)."""
    return HOST_SEAT + 1 + invite.guests.index(guest)
