"""Quick play: tickets, the pairing of their queues and the bot fallback (docs/api.md, "Quick play").

Who pairs, and when, so that nobody has to poll: the request that queues a ticket pairs its
queue at once (a compatible ticket waiting is matched in that very request); a rated ticket
that cannot be paired yet sets a timer for its queue at the moment its gap next widens enough
to change that (``pairing.next_change``); and every ticket has a timer at its bot fallback or
its expiry, whichever comes first. Timers are fired by the worker (and, on the embedded store,
by the process itself): service/background.

A pairing is computed from the queue as read (``pairing.groups_to_match``) and applied by
creating each group's match with the claim of its tickets in one atomic step: a ticket that
changed meanwhile (matched by someone else, cancelled) makes that step write nothing, and the
queue is read again (a few times; then the queue's timer is set for now, and the worker pairs
it). A group's game id is derived from its tickets, so two processes pairing the same group
race for one id and one of them creates it; tickets are matched at most once.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from service import ids, rules
from service.games.context import Context
from service.games.create import NewSeat, Seating, create_seated, current_token, seat_token
from service.games.errors import Unprocessable
from service.matchmaking.errors import LimitReached, Missing, StateConflict
from service.matchmaking.pairing import GapSettings, Waiting, bot_level_for, groups_to_match, next_change
from service.ratings.glicko2 import Rating, Settings as GlickoSettings
from service.store.base import Claim, ClaimLost
from service.store.feed import FeedEntry
from service.store.matchmaking import (AlreadyOpen, KeyReused, Player, RetryKey, Ticket, TicketStatus, TicketStore,
                                       TooManyOpen, queue_id, queue_shard)
from service.store.ratings import RatingStore
from service.store.timers import Timer, Timers
from service.callback_urls import check_callback_url

SEATS = {"classic": 2, "box": 3}
# A queue is read this many tickets at a time, oldest first.
PAIRING_WINDOW = 200
# Pairing a queue again after losing a race for its tickets.
PAIRING_ATTEMPTS = 5
TOKEN_LABEL = "ticket"
TICKET_ID_PREFIX = "t_"
TICKET_MATCHED = "ticket_matched"


@dataclass(frozen=True)
class QuickPlaySettings:
    ticket_seconds: int = 900
    keep_seconds: int = 3600
    max_open_tickets: int = 50_000
    gaps: GapSettings = GapSettings()


@dataclass(frozen=True)
class NewTicket:
    player: Player
    variant: str
    rules: dict | None = None
    rated: bool = True
    bot_after: int | None = None
    callback_url: str | None = None


class QuickPlay:
    def __init__(self, ctx: Context, tickets: Callable[[], TicketStore], timers: Callable[[], Timers],
                 ratings: Callable[[], RatingStore], bot_ratings: Mapping[str, Rating], glicko: GlickoSettings,
                 settings: QuickPlaySettings) -> None:
        self.ctx = ctx
        self._tickets = tickets
        self._timers = timers
        self._ratings = ratings
        self._bot_ratings = bot_ratings
        self._glicko = glicko
        self.settings = settings

    # --- requests -------------------------------------------------------------------------

    def open(self, owner: str | None, new: NewTicket, idempotency_key: str | None = None,
             fingerprint: str = "") -> tuple[Ticket, bool]:
        """Queue a ticket and pair its queue at once. Returns the ticket as it stands after (it may
        be matched already) and whether it is new (False: a retry under the same Idempotency-Key).

        Raises Unauthorized, InvalidInput (rules, callback), StateConflict (already_queued),
        LimitReached, Unprocessable (idempotency_key_reused), StoreError."""
        scope = self.ctx.scope_of(owner)
        match_rules = rules.rules_for(new.variant, new.rules).as_dict()
        callback = None if new.callback_url is None else check_callback_url(
            new.callback_url, self.ctx.settings.webhook_allowed_hosts)
        queue = queue_id(scope, new.variant, match_rules, new.rated)
        shard = queue_shard(queue)
        if idempotency_key is None:
            ticket_id, retry = ids.new_id(TICKET_ID_PREFIX, shard), None
        else:
            label = self.ctx.secret().mac("ticket", scope, idempotency_key)
            ticket_id = ids.derived_id(TICKET_ID_PREFIX, label, "ticket", shard)
            retry = RetryKey(label.hex(), self.ctx.settings.idempotency_ttl_seconds)
        now = self.ctx.now()
        ticket = Ticket(ticket_id, scope, queue, new.player, new.variant, match_rules, new.rated,
                        self._rating_of(scope, new.variant, new.player.external_id), new.bot_after, callback, now,
                        now + self.settings.ticket_seconds, fingerprint)
        try:
            kept = self._tickets().open(ticket, self.settings.max_open_tickets, self.settings.keep_seconds, retry)
        except KeyReused:
            raise _key_reused() from None
        except AlreadyOpen as held:
            raise StateConflict("this player already has a waiting ticket; cancel it or wait for it",
                                code="already_queued", params={"ticket_id": held.ticket_id}) from None
        except TooManyOpen:
            raise LimitReached(f"this API key holds {self.settings.max_open_tickets} open tickets",
                               params={"limit": self.settings.max_open_tickets}) from None
        if kept.id == ticket.id and kept.created_at != ticket.created_at:  # a retry found the first ticket
            if kept.fingerprint != fingerprint:
                raise _key_reused()
            return self._tickets().get(kept.id) or kept, False
        self.pair(queue)
        return self._tickets().get(ticket.id) or ticket, True

    def read(self, owner: str | None, ticket_id: str, wait: float) -> tuple[Ticket, str | None]:
        """The ticket (waiting up to ``wait`` s, at most the server's longest long-poll, for it to
        change from waiting) and, once matched, its seat's token (None once re-issued). Raises
        Missing, StoreError."""
        ticket = self._owned(owner, ticket_id)
        wait = min(wait, self.ctx.settings.long_poll_max_seconds)
        if ticket.status == TicketStatus.WAITING and wait > 0:
            ticket = self._tickets().wait(ticket_id, ticket.version, wait) or ticket
        return ticket, self._token_of(ticket)

    def cancel(self, owner: str | None, ticket_id: str) -> None:
        """Cancel a waiting ticket (a no-op for one cancelled or expired). Raises Missing,
        StateConflict (ticket_matched), StoreError."""
        self._owned(owner, ticket_id)
        after = self._tickets().close(ticket_id, TicketStatus.CANCELLED)
        if after is not None and after.status == TicketStatus.MATCHED:
            raise StateConflict("this ticket is matched already: its match is under way",
                                params={"game_id": after.game_id})
        if after is not None:
            self._tickets().release_player(after)

    # --- pairing --------------------------------------------------------------------------

    def pair(self, queue: str) -> int:
        """Match what can be matched in ``queue`` now; returns how many matches were made.
        Sets the queue's timer for when widening gaps may allow more, or for now when every
        attempt lost a race for its tickets."""
        made = 0
        for _ in range(PAIRING_ATTEMPTS):
            waiting = self._tickets().waiting(queue, PAIRING_WINDOW)
            if not waiting:
                return made
            lost = False
            now = self.ctx.now()
            size = SEATS[waiting[0].variant]
            by_id = {ticket.id: ticket for ticket in waiting}
            queued = [Waiting(t.id, t.created_at, t.rating if t.rated else None) for t in waiting]
            groups = groups_to_match(queued, size, now, self.settings.gaps)
            for group in groups:
                try:
                    self._match([by_id[ticket_id] for ticket_id in group], [])
                    made += 1
                except ClaimLost:
                    lost = True
            if not lost:
                grouped = {ticket_id for group in groups for ticket_id in group}
                rest = [ticket for ticket in queued if ticket.id not in grouped]
                widened = next_change(rest, now, self.settings.gaps) if waiting[0].rated else None
                if widened is not None:
                    self._timers().set("queue", queue, widened)
                return made
        # Lost every race: the requests that won them paired what they read, which may not be all
        # that can pair now. The worker pairs the queue again at once, so nothing is left waiting
        # for a ticket that may never come.
        self._timers().set("queue", queue, self.ctx.now())
        return made

    def on_ticket_timer(self, ticket_id: str) -> None:
        """A ticket's bot fallback or expiry is due (or its timer fired early: set it again)."""
        ticket = self._tickets().get(ticket_id)
        if ticket is None or ticket.status != TicketStatus.WAITING:
            return
        now = self.ctx.now()
        if now >= ticket.expires_at:
            closed = self._tickets().close(ticket_id, TicketStatus.EXPIRED)
            if closed is not None and closed.status == TicketStatus.EXPIRED:
                self._tickets().release_player(closed)
            return
        if ticket.bot_at is not None and now >= ticket.bot_at:
            self.pair(ticket.queue)  # a person who came meanwhile goes first
            ticket = self._tickets().get(ticket_id)
            if ticket is not None and ticket.status == TicketStatus.WAITING:
                self._with_bots(ticket)
            return
        self._timers().set("ticket", ticket_id, min(at for at in (ticket.expires_at, ticket.bot_at) if at is not None))

    def on_queue_timer(self, queue: str) -> None:
        self.pair(queue)

    def _with_bots(self, ticket: Ticket) -> None:
        level = bot_level_for(ticket.rating, self._bot_ratings)
        bots = [NewSeat(f"Bot {level}", level) for _ in range(SEATS[ticket.variant] - 1)]
        try:
            self._match([ticket], bots)
        except ClaimLost:
            pass  # matched or cancelled meanwhile

    def _match(self, tickets: list[Ticket], bots: list[NewSeat]) -> None:
        """Create the match of ``tickets`` (oldest first, seats in that order) and ``bots``,
        claiming the tickets. Raises ClaimLost."""
        first = tickets[0]
        shard = queue_shard(first.queue)
        game_id = ids.derived_game_id(self.ctx.secret().mac("pair", *(t.id for t in tickets)), "pair", shard)
        seats = tuple(NewSeat(t.player.name, None, t.player.external_id, t.player.metadata) for t in tickets) + \
            tuple(bots)
        owner = None if first.scope == "-" else first.scope
        callback = next((t.callback_url for t in tickets if t.callback_url), None)
        seating = Seating(first.variant, seats, first.rules, owner, first.rated, callback, TOKEN_LABEL)
        claims, feed = [], []
        for seat, ticket in enumerate(tickets):
            after = replace(ticket, status=TicketStatus.MATCHED, game_id=game_id, seat=seat,
                            version=ticket.version + 1)
            claims.append(Claim("ticket", ticket.id, ticket.version, TicketStatus.WAITING, TicketStatus.MATCHED,
                                after.dump(), ticket.queue, Timer("ticket", ticket.id).member))
            body = self._matched_body(after)
            feed.append(FeedEntry(f"tm_{ticket.id}", "ticket", ticket.id, TICKET_MATCHED, ticket.scope, body,
                                  ticket.callback_url or ""))
        create_seated(self.ctx, game_id, seating, tuple(claims), tuple(feed))
        for ticket in tickets:
            self._tickets().release_player(ticket)

    def _matched_body(self, ticket: Ticket) -> str:
        """The ``ticket_matched`` webhook: who was matched where (never a token: the ticket's
        read hands it to the key that created it)."""
        return json.dumps({"type": TICKET_MATCHED, "timestamp": rules.iso_time(self.ctx.now()),
                           "data": {"ticket_id": ticket.id, "game_id": ticket.game_id, "seat": ticket.seat,
                                    "variant": ticket.variant, "rated": ticket.rated,
                                    "player": {"external_id": ticket.player.external_id, "name": ticket.player.name,
                                               "metadata": ticket.player.metadata}}},
                          separators=(",", ":"))

    # --- helpers --------------------------------------------------------------------------

    def _rating_of(self, scope: str, variant: str, external_id: str) -> float:
        (standing,) = self._ratings().standings(scope, variant, [external_id])
        return self._glicko.initial_rating if standing is None else standing.rating

    def _owned(self, owner: str | None, ticket_id: str) -> Ticket:
        ticket = self._tickets().get(ticket_id) if ids.is_placed_id(TICKET_ID_PREFIX, ticket_id) else None
        if ticket is None or ticket.scope != self.ctx.scope_of(owner):
            raise Missing("no ticket with this id for this API key")
        return ticket

    def _token_of(self, ticket: Ticket) -> str | None:
        if ticket.status != TicketStatus.MATCHED:
            return None
        return current_token(self.ctx, ticket.game_id, ticket.seat,
                             seat_token(self.ctx, ticket.game_id, TOKEN_LABEL, ticket.seat))


def _key_reused() -> Unprocessable:
    return Unprocessable("this Idempotency-Key was already used for a different request", field="Idempotency-Key",
                         code="idempotency_key_reused")
