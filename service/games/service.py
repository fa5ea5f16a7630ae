"""The use cases: the only layer that knows both the rules engine and the store.

Every request is at most one store read and one store write: a change loads the game (and
any response stored under its idempotency key) in one round trip, applies the move with the
pure engine, lets ``flow`` play what no person decides (bots, due timeouts, a bot sitter's
advice), and saves the result with all of its effects in one compare-and-set on the version.
A read that finds a deadline passed settles it first, through the same compare-and-set.
"""
from __future__ import annotations

import base64
import binascii
import functools
import json
import contextlib
import random
import time
from collections.abc import Callable, Set
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import TypeVar

from service import bots, ids, rules
from service.games import create as creation
from service.games import flow, notices
from service.games.commit import (Reply, Retry, commit, deadline_of, parsed, replayed, reply_key, seat_of,
                                  stored_reply)
from service.games.context import Context
from service.games.errors import ConcurrentChange, NotAllowed, PreconditionFailed, Unprocessable
from service.games.presence import online_seats
from service.games.record import Record, player_index_id
from service.store.base import GameMissing, IndexList, Loaded, VersionConflict
from service.store.errors import StoreError
from service.tokens import hash_token

Method = TypeVar("Method", bound=Callable)
# A lost compare-and-set of a change that retries on its own (a settlement, a rematch mark).
RETRIES = 3
# Long-polls that wait across a turn deadline wake spread over this many seconds after it, so
# that thousands of them on one game do not all race to settle it: the first one's save wakes
# the others with the timeout.
SETTLE_SPREAD = 0.25


def _counts_store_errors(method: Method) -> Method:
    """Report every StoreError that ``method`` lets through to the metrics."""

    @functools.wraps(method)
    def counted(self: GameService, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except StoreError:
            self.ctx.metrics.record_store_error()
            raise

    return counted  # type: ignore[return-value]


def analyze_hand(cards: list, knock_limit: int) -> dict:
    """The engine's analysis of 10 or 11 cards (for 11, after the best discard).

    Raises InvalidInput (``invalid_card`` naming a bad or repeated card)."""
    analysis = rules.analyze_hand(cards, knock_limit)
    answer = {"deadwood": analysis.deadwood, "melds": [[str(c) for c in meld] for meld in analysis.melds],
              "deadwood_cards": [str(c) for c in analysis.deadwood_cards], "gin": analysis.gin,
              "can_knock": analysis.can_knock}
    if analysis.best_discard is not None:
        answer["best_discard"] = str(analysis.best_discard)
    return answer


class GameService:
    """The game use cases over one store."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    @_counts_store_errors
    def check_ready(self) -> None:
        """Raise StoreError unless the store answers now."""
        self.ctx.store.check()

    @_counts_store_errors
    def create(self, new: creation.NewGame, caller: creation.Caller, idempotency_key: str | None = None,
               fingerprint: str = "") -> creation.Created:
        """See ``service.games.create.create``."""
        return creation.create(self.ctx, new, caller, idempotency_key, fingerprint)

    @_counts_store_errors
    def view(self, game_id: str, token: str | None) -> Reply:
        """The game as the token's seat (or the public, without a token) sees it.

        Raises GameMissing/GameExpired, Unauthorized (unknown token), StoreError."""
        loaded, record = self._settled(game_id, present=True)
        viewer = None if token is None else seat_of(record, token)
        view = self.shown(game_id, record, viewer, loaded.present)
        if loaded.ratings is not None:
            view["result"]["rating_changes"] = json.loads(loaded.ratings)
        return Reply(view, loaded.version, rated=loaded.ratings is not None)

    @_counts_store_errors
    def note_rating_changes(self, game_id: str, changes: list[dict]) -> None:
        """Show a rated match's applied rating changes in its result and announce them
        (``rating_changed``), once: a second call, or one for a match gone since, changes nothing.
        Raises StoreError."""
        try:
            loaded = self.ctx.store.load(game_id)
        except GameMissing:
            return
        if loaded.ratings is not None:
            return
        record = parsed(loaded)
        announced = notices.feed(self.ctx.scope_of(record.owner), record.callback_url,
                                 lambda: notices.rating_changed(game_id, record, changes, self.ctx.now()))
        self.ctx.store.note_ratings(game_id, json.dumps(changes, separators=(",", ":")), announced)

    def shown(self, game_id: str, record: Record, viewer: int | None, present: Set[int]) -> dict:
        """The view of ``record`` for ``viewer``, with each seat's presence now."""
        return record.view(game_id, viewer, online_seats(record, present, self.ctx.now()))

    def current(self, game_id: str, present: bool = False) -> tuple[Loaded, Record]:
        """The game as stored now (with ``present``, the seats present), any deadline that
        passed settled first. Raises GameMissing/GameExpired, ConcurrentChange, StoreError."""
        return self._settled(_known(game_id), present)

    @_counts_store_errors
    def hint(self, game_id: str, token: str) -> dict:
        """The standard policy's suggestion for the token's seat (the sitter gets the captain's).

        Raises GameMissing, Unauthorized, Forbidden (a seat with no cards), IllegalMove(game_finished)."""
        _, record = self._settled(game_id)
        viewer = seat_of(record, token)
        match = record.match
        if match.is_finished:
            raise rules.IllegalMove("the match is over", code="game_finished", params={"status": match.status.value})
        seat = match.captain if viewer == match.sitter else viewer
        if seat not in match.hand.seats:
            raise rules.Forbidden(f"seat {viewer} has no cards in this hand", params={"seat": viewer})
        if match.turn != seat:
            return {"seat": seat, "action": None, "reason": f"waiting for seat {match.turn} to play",
                    "reason_code": "waiting", "params": {"turn": match.turn}}
        hint = bots.hint(rules.observe(match, seat))
        return {"seat": seat, "action": hint.action.to_json(), "reason": hint.reason,
                "reason_code": hint.reason_code, "params": hint.params}

    @_counts_store_errors
    def events(self, game_id: str, token: str | None, after: int, wait: float) -> dict:
        """Events after ``after`` as the viewer may see them, waiting up to ``wait`` s for one.

        Every read loads the game first and settles a deadline that has passed, so that a
        spectator's long-poll too sees the timeout without a worker. Raises
        GameMissing/GameExpired, Unauthorized, StoreError. Holds no lock while waiting."""
        record = self._settled(game_id)[1]
        viewer = None if token is None else seat_of(record, token)
        wait = min(wait, self.ctx.settings.long_poll_max_seconds)
        with self._present_while(game_id, viewer, wait):
            stored = self._events_within(game_id, record.match, after, wait)
        shown = [rules.redact_event(event, viewer) for event in stored]
        return {"events": shown, "last_seq": shown[-1]["seq"] if shown else after}

    def _present_while(self, game_id: str, viewer: int | None, wait: float) -> AbstractContextManager:
        """A player's long-poll that waits counts as that seat's presence while it waits."""
        if viewer is None or wait <= 0:
            return contextlib.nullcontext()
        return self.ctx.store.holding(game_id, viewer)

    def _events_within(self, game_id: str, match: rules.Match, after: int, wait: float) -> list[str]:
        """The stored events after ``after``, waiting up to ``wait`` s while there are none.

        A turn deadline that passes during the wait is settled when it passes, so the waiter
        is answered with the timeout even when no worker runs."""
        store, ends = self.ctx.store, time.monotonic() + wait
        while (left := ends - time.monotonic()) > 0:
            deadline = deadline_of(match)
            due_in = left
            if deadline is not None:
                due_in = max(deadline - self.ctx.now(), 0.0) + random.uniform(0, SETTLE_SPREAD)
            stored = store.wait_for_events(_known(game_id), after, min(left, due_in))
            if stored or due_in >= left:
                return stored
            match = self._settled(game_id)[1].match
            # The timeout's events are read without taking a long-poll slot again: with every
            # slot taken meanwhile, the waiter would be refused what it waited for.
            stored = store.events(_known(game_id), after)
            if stored:
                return stored
        return store.events(_known(game_id), after)

    @_counts_store_errors
    def act(self, game_id: str, token: str, action: rules.Action, retry: Retry) -> Reply:
        """Apply the token seat's ``action`` and everything that follows without a person.

        A retry carrying an Idempotency-Key already answered gets that answer again, without the
        move being applied twice. Raises GameMissing, Unauthorized, PreconditionFailed,
        ConcurrentChange (another change won, or a turn deadline passed first), Unprocessable
        (key reused), the engine's errors, StoreFull, StoreError."""
        key = reply_key(token, retry.idempotency_key)
        loaded = self.ctx.store.load(_known(game_id), key, present=True)
        earlier = self._replay(game_id, loaded, token, retry)
        if earlier is not None:
            return earlier
        record = parsed(loaded)
        seat = seat_of(record, token)
        _check_precondition(retry, loaded.version)
        now = self.ctx.now()
        settled, settling = self._due(record.match, now)
        if settling:
            # The move was meant for the game before the deadline passed: the missed turn is
            # played and saved, and the move is not applied to what follows (against a bot it
            # could be legal again), so a timeout and a late move never both apply.
            self._commit_quietly(game_id, loaded.version, record, settled, settling, now)
            # A move conditional on the version it saw lost a race, as it would to another move.
            _check_precondition(retry, settled.version)
            raise ConcurrentChange("a turn deadline passed before this move arrived; reload the game")
        played, events = rules.apply(record.match, seat, action, now=now)
        played, more = flow.advance(played, now)
        after = record.acted(played, seat, now)
        reply = Reply(self.shown(game_id, after, seat, loaded.present), played.version)
        kept = None
        if key is not None:
            kept = stored_reply(key, reply, retry.fingerprint, self.ctx.settings.idempotency_ttl_seconds,
                                with_body=not isinstance(action, rules.Advise))
        try:
            commit(self.ctx, game_id, loaded.version, record.match, after, events + more, kept, at=now)
        except VersionConflict:
            self.ctx.metrics.record_conflict()
            return self._after_conflict(game_id, token, key, retry)
        return reply

    @_counts_store_errors
    def dry_run_layoff(self, game_id: str, token: str, action: rules.LayOff) -> dict:
        """What the defender's lay-down would leave, without applying it.

        Raises the errors of ``act`` for a lay-off that ``act`` would refuse."""
        _, record = self._settled(game_id)
        seat = seat_of(record, token)
        match = record.match
        rules.check_turn(match, seat, action)
        hand = match.hand
        melds, layoffs, remaining = hand.check_lay_off(seat, action, match.rules)
        knock = hand.knock
        deadwood = rules.deadwood_of(remaining)
        outcome, winner, points = rules.score_hand(knock.deadwood, deadwood, knock.knocker, seat, match.rules)
        return {"melds": [[str(c) for c in meld] for meld in melds],
                "layoffs": [{"card": str(card), "meld": meld} for card, meld in layoffs],
                "deadwood_cards": [str(c) for c in rules.cards_of(remaining)], "deadwood": deadwood,
                "outcome": outcome.value, "winner": winner, "points": points}

    @_counts_store_errors
    def abort(self, game_id: str, owner: str | None) -> Reply:
        """End the match with no winner; only the API key that created it may.

        Raises NotAllowed, IllegalMove(game_finished), GameMissing, StoreError."""
        loaded, record = self._owned(game_id, owner, present=True)
        aborted, events = rules.abort(record.match)
        after = record.with_match(aborted)
        try:
            commit(self.ctx, game_id, loaded.version, record.match, after, events)
        except VersionConflict:
            raise ConcurrentChange("the game changed while it was being aborted; try again") from None
        return Reply(self.shown(game_id, after, None, loaded.present), aborted.version)

    @_counts_store_errors
    def reissue_token(self, game_id: str, seat: int, owner: str | None) -> dict:
        """A new token for ``seat`` (a person's); the old one stops working at once.

        Raises NotAllowed, Unprocessable (no such seat, a bot seat), GameMissing, StoreError."""
        for _ in range(RETRIES):
            loaded, record = self._owned(game_id, owner)
            if not 0 <= seat < len(record.seats) or record.seats[seat].token_hash is None:
                raise Unprocessable(f"seat {seat} is not a person's seat of this match", code="invalid_request",
                                    field="seat", params={"seat": seat})
            token = self.ctx.secret().new_token(game_id)
            seats = list(record.seats)
            seats[seat] = replace(seats[seat], token_hash=hash_token(token))
            match = replace(record.match, version=record.match.version + 1)
            after = replace(record, seats=tuple(seats), match=match)
            try:
                commit(self.ctx, game_id, loaded.version, record.match, after, [])
            except VersionConflict:
                continue
            return {"seat": seat, "token": token, "version": match.version}
        raise ConcurrentChange("the game kept changing; try again")

    @_counts_store_errors
    def rematch(self, game_id: str, token: str) -> creation.Created:
        """The next match between the players of a finished one; every player gets the same one,
        with their own token (null once the integrator replaced it: only the replacement acts).
        Raises IllegalMove (not finished, or aborted), Unauthorized, GameMissing, StoreError."""
        loaded, record = self._settled(game_id)
        seat = seat_of(record, token)
        if record.match.status is not rules.Status.FINISHED:
            # An aborted match was ended by its integrator, who decides whether these players meet again.
            raise rules.IllegalMove(f"a rematch needs a finished match, not an {record.match.status.value} one",
                                    code="game_not_finished", params={"status": record.match.status.value})
        new_id = ids.derived_game_id(b"rematch", game_id)
        new, events, issued = creation.rematch_record(self.ctx, record, new_id)
        found = creation.store_new(self.ctx, new_id, new, events)
        if found is None:
            self.ctx.metrics.record_game_created(new.match.variant)
        else:
            new = found[0]
        self._mark_rematch(game_id, new_id)
        valid = creation.still_valid(new, issued)
        players = [creation.SeatToken(s, new.match.names[s], valid[s] if s == seat else None)
                   for s in range(len(issued))]
        return creation.Created(new_id, new.view(new_id, None), players, new.match.version, new=found is None)

    @_counts_store_errors
    def player_games(self, owner: str | None, external_id: str, finished: bool, cursor: str | None,
                     limit: int) -> dict:
        """The matches of ``external_id`` created under the API key ``owner``, newest first.

        Raises NotAllowed (no API key, except on an embedded store without keys: one unscoped
        set of players), Unprocessable (bad cursor), StoreError."""
        if self.ctx.scope_of(owner) is None:
            raise NotAllowed("listing a player's games needs an API key")
        which = IndexList.FINISHED if finished else IndexList.ACTIVE
        player = player_index_id(owner, external_id)
        page = self.ctx.store.index_page(player, which, _decoded_cursor(cursor), limit)
        games = []
        for created_ms, game_id, state in page:
            record = Record.parse(state)
            seat = next(s for s, info in enumerate(record.seats) if info.external_id == external_id)
            games.append(_summary(game_id, record, seat, created_ms))
        next_cursor = _encoded_cursor(page[-1][0], page[-1][1]) if len(page) == limit else None
        return {"games": games, "next_cursor": next_cursor}

    @_counts_store_errors
    def settle(self, game_id: str) -> None:
        """Play what is due in ``game_id`` now (the handler of its turn deadline's timer).

        A game already settled by another request, or gone, is left as it is; a deadline not
        due yet (another clock ran ahead) goes back into the schedule."""
        try:
            _, record = self._settled(game_id)
        except GameMissing:
            return
        deadline = deadline_of(record.match)
        if deadline is not None:
            self.ctx.store.schedule(game_id, deadline)

    # --- helpers ---------------------------------------------------------------------------
    def _settled(self, game_id: str, present: bool = False) -> tuple[Loaded, Record]:
        """The game (with ``present``, the seats present), with any deadline that passed
        settled (and saved) first."""
        for _ in range(RETRIES):
            loaded = self.ctx.store.load(_known(game_id), present=present)
            record = parsed(loaded)
            now = self.ctx.now()
            settled, events = self._due(record.match, now)
            if not events:
                return loaded, record
            after = record.with_match(settled)
            try:
                commit(self.ctx, game_id, loaded.version, record.match, after, events, at=now)
            except VersionConflict:
                continue  # someone else settled it or moved: read again
            return Loaded(after.dump(), settled.version, present=loaded.present), after
        raise ConcurrentChange("the game kept changing; try again")

    def _due(self, match: rules.Match, now: float) -> tuple[rules.Match, list[rules.Event]]:
        if not rules.is_due(match, now):
            return match, []
        return flow.advance(match, now)

    def _commit_quietly(self, game_id: str, version: int, record: Record, settled: rules.Match,
                        events: list[rules.Event], now: float) -> None:
        try:
            commit(self.ctx, game_id, version, record.match, record.with_match(settled), events, at=now)
        except VersionConflict:
            pass  # another request settled it first

    def _owned(self, game_id: str, owner: str | None, present: bool = False) -> tuple[Loaded, Record]:
        loaded, record = self._settled(game_id, present)
        if owner is None or record.owner != owner:
            raise NotAllowed("only the API key that created this match may do this")
        return loaded, record

    def _mark_rematch(self, game_id: str, new_id: str) -> None:
        """Record the rematch in the finished match (once, whoever asked first)."""
        for _ in range(RETRIES):
            loaded = self.ctx.store.load(game_id)
            record = parsed(loaded)
            if record.rematch_id is not None:
                return
            match = record.match
            marked, events = rules.note_rematch(match, new_id)
            try:
                commit(self.ctx, game_id, loaded.version, match, replace(record, match=marked, rematch_id=new_id),
                       events)
                return
            except VersionConflict:
                continue

    def _replay(self, game_id: str, loaded: Loaded, token: str, retry: Retry) -> Reply | None:
        """The answer to a request retried under its Idempotency-Key; None when it is no retry.

        The token must still be the seat's: the first answer holds the seat's cards, and a
        replaced (leaked) token must not read them. Raises Unauthorized, Unprocessable (the key
        came with another request)."""
        if loaded.replay is None:
            return None
        record = parsed(loaded)
        seat = seat_of(record, token)
        first = replayed(loaded.replay, retry.fingerprint)
        if first is not None:
            return first
        # Kept without a body: the game now.
        return Reply(self.shown(game_id, record, seat, loaded.present or frozenset()), loaded.version)

    def _after_conflict(self, game_id: str, token: str, key: str | None, retry: Retry) -> Reply:
        """Answer a lost compare-and-set: the winner's reply if it was this very request."""
        if key is not None:
            earlier = self._replay(game_id, self.ctx.store.load(game_id, key, present=True), token, retry)
            if earlier is not None:
                return earlier
        if retry.accept_versions is not None:
            raise PreconditionFailed("the game is no longer at the version named in If-Match")
        raise ConcurrentChange("the game changed while your move was applied; reload and retry")


def _known(game_id: str) -> str:
    """``game_id`` if it can exist; anything else is missing without asking the store."""
    if not ids.is_game_id(game_id):
        raise GameMissing(game_id)
    return game_id


def _check_precondition(retry: Retry, version: int) -> None:
    if retry.accept_versions is not None and version not in retry.accept_versions:
        raise PreconditionFailed(f"the game is at version {version}, not the one named in If-Match",
                                 params={"version": version})


def _summary(game_id: str, record: Record, seat: int, created_ms: int) -> dict:
    match = record.match
    return {"id": game_id, "created_at": rules.iso_time(created_ms / 1000), "variant": match.variant,
            "status": match.status.value, "version": match.version, "seat": seat, "turn": match.turn,
            "your_turn": match.turn == seat,
            "players": [{"seat": s, "name": match.names[s], "bot": match.is_bot(s), "score": match.scores[s],
                         "external_id": info.external_id} for s, info in enumerate(record.seats)],
            "metadata": record.metadata}


def _encoded_cursor(created_ms: int, game_id: str) -> str:
    return base64.urlsafe_b64encode(f"{created_ms}:{game_id}".encode()).decode().rstrip("=")


def _decoded_cursor(cursor: str | None) -> tuple[int, str] | None:
    if cursor is None:
        return None
    try:
        created, _, game_id = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode().partition(":")
        if not ids.is_game_id(game_id):
            raise ValueError
        return int(created), game_id
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise Unprocessable("this cursor is not one this service gave", field="cursor") from None
