"""The use cases of a match that is over: its record (JSON or text), its replay, its analysis.

Each loads the match once (404/410 as for any read), refuses a match still being played (409
``game_not_finished``) and builds the record from the stored event log. The analysis, the one
that costs real CPU, is computed once per match and kept with it (``store.keep``: it lives and
expires with the match); computing one counts against the client's analysis allowance, and of
concurrent first requests one computes while the others wait for its result.
"""
from __future__ import annotations

import base64
import json
import math
import time
import zlib

from service import ids, rules
from service.games.context import Context
from service.games.errors import TooMany, Unprocessable
from service.games.record import Record
from service.records import analysis, text
from service.records.checkpoints import Recent, Replayed
from service.records.record import RecordIncomplete, build_record
from service.rules.errors import declare
from service.store.base import GameMissing

ANALYSIS = "analysis"
QUOTA_WINDOW_SECONDS = 60
# A computation takes well under this (bench/analysis.py); a claim whose holder died lapses
# after it, and whoever waited computes the analysis itself.
CLAIM_SECONDS = 10
WAIT_POLL_SECONDS = 0.1
_REPLAYED = Recent()


class RecordNotKept(rules.GameError):
    """The stored events no longer hold the whole match (HTTP 409 ``record_incomplete``)."""

    status = 409
    code = "record_incomplete"
    titles = {"record_incomplete": "The match's record is not complete"}


declare(Unprocessable.status, "step_out_of_range", "No such step in this match")
declare(TooMany.status, "analysis_quota_exceeded", "Too many analyses computed")


class RecordService:
    """Records, replays and analyses over one store. ``analysis_per_minute``: analyses one
    client may have computed per minute (0: no limit)."""

    def __init__(self, ctx: Context, analysis_per_minute: int) -> None:
        self.ctx = ctx
        self.analysis_per_minute = analysis_per_minute

    def record(self, game_id: str) -> dict:
        """The record of a finished or aborted match.

        Raises GameMissing, GameExpired, IllegalMove(game_not_finished), RecordNotKept, StoreError."""
        return self._record(game_id, self._finished(game_id)[0])

    def text(self, game_id: str) -> str:
        """The record in the text notation. Raises what ``record`` raises."""
        return text.to_text(self.record(game_id))

    def replay(self, game_id: str, step: int) -> dict:
        """The full view after ``step`` actions. Raises what ``record`` raises, and
        Unprocessable(step_out_of_range)."""
        stored, state = self._finished(game_id)
        replayed = _REPLAYED.get((game_id, state))
        if replayed is None:
            replayed = _REPLAYED.put((game_id, state), Replayed.of(self._record(game_id, stored)))
        record = replayed.record
        if not 0 <= step <= record["steps"]:
            raise Unprocessable(f"this match has steps 0 to {record['steps']}", code="step_out_of_range",
                                field="step", params={"steps": record["steps"]})
        position = replayed.position(step)
        match = position.match
        hand = match.hand
        return {
            "step": step, "steps": record["steps"], "action": position.action,
            "game": stored.with_match(match).view(game_id, None),
            "seats": [rules.view_for(match, seat)["you"] for seat in range(match.seat_count)],
            "stock": [] if hand is None else [str(card) for card in reversed(hand.stock)],
        }

    def analysis(self, game_id: str, client: str) -> dict:
        """The strong policy's analysis of the people's decisions, computed once and kept.
        ``client`` names who asks (their allowance counts the computations they cause).

        Raises what ``record`` raises, and TooMany(analysis_quota_exceeded)."""
        stored = self._finished(game_id)[0]
        store = self.ctx.store
        kept = store.kept(game_id, ANALYSIS)
        if kept is not None:
            return _unpack(kept)
        self._count(client)
        if not store.claim(game_id, ANALYSIS, CLAIM_SECONDS):
            kept = self._wait_for_analysis(game_id)
            if kept is not None:
                return _unpack(kept)
        computed = analysis.analyse(self._record(game_id, stored))
        store.keep(game_id, ANALYSIS, _pack(computed))
        return computed

    # --- helpers ---------------------------------------------------------------------------
    def _finished(self, game_id: str) -> tuple[Record, str]:
        """The stored match and its stored text; refused while it is being played."""
        if not ids.is_game_id(game_id):
            raise GameMissing(game_id)
        loaded = self.ctx.store.load(game_id)
        stored = Record.parse(loaded.state)
        match = stored.match
        if not match.is_finished:
            raise rules.IllegalMove("the match is still being played: its record is kept once it is over",
                                    code="game_not_finished", params={"status": match.status.value})
        return stored, loaded.state

    def _record(self, game_id: str, stored: Record) -> dict:
        events = [rules.decode_event(text) for text in self.ctx.store.events(game_id, 0)]
        try:
            return build_record(game_id, stored.match, stored.created_at_ms, events)
        except RecordIncomplete as incomplete:
            raise RecordNotKept("this match was longer than the events the service keeps per match, so its "
                                "record cannot be complete", params={"first_kept": incomplete.first_kept}) from None

    def _count(self, client: str) -> None:
        limit = self.analysis_per_minute
        if limit and self.ctx.store.count(f"analysis:{client}", QUOTA_WINDOW_SECONDS) > limit:
            reset = max(1, math.ceil(QUOTA_WINDOW_SECONDS - self.ctx.now() % QUOTA_WINDOW_SECONDS))
            raise TooMany(f"at most {limit} analyses may be computed per minute (analyses already made are "
                          "not counted)", reset, code="analysis_quota_exceeded", params={"limit": limit})

    def _wait_for_analysis(self, game_id: str) -> str | None:
        """What another request computes meanwhile, or None when its claim lapses first."""
        ends = time.monotonic() + CLAIM_SECONDS
        while time.monotonic() < ends:
            time.sleep(WAIT_POLL_SECONDS)
            kept = self.ctx.store.kept(game_id, ANALYSIS)
            if kept is not None:
                return kept
        return None


def _pack(document: dict) -> str:
    return base64.b64encode(zlib.compress(json.dumps(document, separators=(",", ":")).encode())).decode()


def _unpack(text: str) -> dict:
    return json.loads(zlib.decompress(base64.b64decode(text)))
