"""The OpenAPI document's response examples, taken from real matches.

At document build time, seeded matches are created and played through the use cases
(``GameService``) on a private in-memory store, with a fixed server secret, a fixed clock and
Idempotency-Keys (so game ids and tokens are derived, not random): every example is a real
answer, and the same one at every build. Moves are chosen from the views alone (pass the
upcard, draw from the stock, knock as soon as the view says one may, else discard the view's
best discard, answer a knock with the engine's lay-down), so the examples change only when
the engine or the views do. Refusals met on the way become the problem examples.

The only value not as served: a token re-issued by ``reissueToken`` is random at each call,
so its example shows a fixed stand-in.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from service import rules, tokens
from service.api.problems import problem_document, refusal_problem
from service.games import Caller, Context, GameService, NewGame, NewSeat, Retry, Settings, analyze_hand
from service.games.setup import Uncounted
from service.records.service import RecordService
from service.rules import ActionType
from service.store.memory import MemoryStore

SECRET = "openapi-examples-server-secret-0123456789"
API_KEY = "example-api-key"
START = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc).timestamp()
SECONDS_PER_MOVE = 7
CLASSIC_SEED = 7
BOX_SEED = 11
SHORT_MATCH = {"target_score": 10}
# The stand-in for a token that is random at each call.
REISSUED_TOKEN = "Q9v2m3kq8bYz4N5VYhQ0mG7xk2u9aVJm3Lw0pQvS1Eg"
LATE_EVENTS = 4

Examples = dict[str, dict[str, dict[str, dict]]]


@dataclass(frozen=True)
class Recorded:
    """``responses[operationId][status][name]`` = ``{summary, value}``; ``problems[code]`` = a body."""

    responses: Examples
    problems: dict[str, dict]


@functools.cache
def recorded() -> Recorded:
    """The examples (built once per process: they are the same at every build)."""
    return _Recorder().record()


@dataclass
class _Table:
    game_id: str
    tokens: list[str | None]


@dataclass
class _Recorder:
    now: float = START
    responses: Examples = field(default_factory=dict)
    problems: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self) -> None:
        context = Context(MemoryStore(), Settings(), Uncounted(), SECRET, clock=lambda: self.now)
        self.games = GameService(context)
        self.records = RecordService(context, analysis_per_minute=0)
        self.owner = tokens.key_id(API_KEY)

    # --- recording -----------------------------------------------------------------------
    def example(self, operation: str, status: int | str, name: str, summary: str, value: object,
                media: str | None = None) -> None:
        shown = {"summary": summary, "value": value, **({"media": media} if media else {})}
        self.responses.setdefault(operation, {}).setdefault(str(status), {})[name] = shown

    def refused(self, call: Callable[[], object]) -> None:
        """Run ``call``, which must be refused, and keep the first problem of its code."""
        try:
            call()
        except rules.GameError as error:
            body = problem_document(refusal_problem(error))
            self.problems.setdefault(body["code"], body)
            return
        raise AssertionError("an example refusal was accepted")

    # --- the matches ---------------------------------------------------------------------
    def create(self, variant: str, seats: tuple[NewSeat, ...], key: str, seed: int | None, rules_: dict | None = None,
               metadata: dict | None = None) -> tuple[_Table, dict]:
        new = NewGame(variant, seats, rules_, seed, metadata)
        # The fingerprint of a request body: here, of what it asks for.
        created = self.games.create(new, Caller(self.owner, "203.0.113.7", embedded=True), key, repr(new))
        body = {"game": created.view, "players": [vars(p) for p in created.players]}
        return _Table(created.game_id, [p.token for p in created.players]), body

    def act(self, table: _Table, seat: int, kind: ActionType, body: dict | None = None) -> dict:
        self.now += SECONDS_PER_MOVE
        action = rules.parse_action(kind, body or {})
        return self.games.act(table.game_id, table.tokens[seat], action, Retry(None, None, "")).body

    def view(self, table: _Table, seat: int | None = None) -> dict:
        return self.games.view(table.game_id, None if seat is None else table.tokens[seat]).body

    def play_one(self, table: _Table) -> tuple[str, dict]:
        """One move of the seat to act, chosen from its view; returns (action, its answer)."""
        public = self.view(table)
        seat = public["hand"]["turn"]
        you = self.view(table, seat)["you"]
        phase = public["hand"]["phase"]
        if phase == "upcard_offer":
            return "pass", self.act(table, seat, ActionType.PASS)
        if phase == "draw":
            return "draw", self.act(table, seat, ActionType.DRAW, {"source": "stock"})
        if phase == "layoff":
            return "layoff", self.act(table, seat, ActionType.LAYOFF)
        if you["can_knock"]:
            return "knock", self.act(table, seat, ActionType.KNOCK, {"discard": you["best_discard"]})
        return "discard", self.act(table, seat, ActionType.DISCARD, {"card": you["best_discard"]})

    def play_until(self, table: _Table, done: Callable[[dict], bool]) -> None:
        while not done(self.view(table)):
            self.play_one(table)

    def record(self) -> Recorded:
        self.classic()
        self.short_match()
        self.box()
        self.managed()
        self.example("liveness", 200, "ok", "Alive", {"status": "ok"})
        self.example("readiness", 200, "ok", "Ready: the game store answers", {"status": "ok"})
        return Recorded(self.responses, self.problems)

    def classic(self) -> None:
        """A classic match between two people, through its first hand and into the second."""
        seats = (NewSeat("Ann", external_id="user-4711", metadata={"avatar": "fox"}), NewSeat("Bob"))
        table, created = self.create("classic", seats, "example-classic", CLASSIC_SEED,
                                     metadata={"tournament": "spring"})
        self.example("createGame", 201, "classic", "A classic match between two people", created)
        public = self.view(table)
        self.example("getGame", 200, "public", "The public view (no token), during the upcard offer", public)
        mover = public["hand"]["turn"]
        other = 1 - mover
        self.refused(lambda: self.act(table, other, ActionType.PASS))  # not_your_turn
        self.refused(lambda: self.act(table, mover, ActionType.DISCARD, {"card": "As"}))  # wrong_phase
        self.refused(lambda: self.act(table, mover, ActionType.DISCARD, {"card": "Zz"}))  # invalid_card
        self.refused(lambda: self.games.view(table.game_id, "not-a-token-of-this-game"))  # unauthorized
        self.refused(lambda: self.games.view("g_AAAAAAAAAAAAAAAAAAAAAA", None))  # game_not_found
        self.refused(lambda: self.games.act(table.game_id, table.tokens[mover], rules.Pass(),
                                            Retry(frozenset({99}), None, "")))  # version_mismatch
        self.refused(lambda: self.games.rematch(table.game_id, table.tokens[mover]))  # game_not_finished
        self.refused(lambda: self.games.abort(table.game_id, tokens.key_id("another-key")))  # forbidden
        self.refused(lambda: self.create("classic", seats, "example-classic", CLASSIC_SEED + 1))
        self.example("pass", 200, "passed", "Passed on the upcard: the opponent may take it",
                     self.act(table, mover, ActionType.PASS))
        self.example("getHint", 200, "hint", "A hint for the seat to act",
                     self.games.hint(table.game_id, table.tokens[other]))
        self.example("listEvents", 200, "early", "The first events, as the player of seat 0 sees them",
                     self.games.events(table.game_id, table.tokens[0], 0, 0))
        self.play_until(table, lambda view: view["hand"]["phase"] == "draw")
        seat = self.view(table)["hand"]["turn"]
        self.example("draw", 200, "drew", "Drew from the stock: now discard (or knock)",
                     self.act(table, seat, ActionType.DRAW, {"source": "stock"}))
        you = self.view(table, seat)["you"]
        held = set(you["hand"])
        absent = next(str(card) for card in rules.CARDS if str(card) not in held)
        self.refused(lambda: self.act(table, seat, ActionType.DISCARD, {"card": absent}))  # card_not_in_hand
        if not you["can_knock"]:
            self.refused(lambda: self.act(table, seat, ActionType.KNOCK, {"discard": you["best_discard"]}))
        self.example("getGame", 200, "player", "A player's view in the discard phase (11 cards)",
                     self.view(table, seat))
        self.example("discard", 200, "discarded", "Discarded: the opponent's turn",
                     self.act(table, seat, ActionType.DISCARD, {"card": you["best_discard"]}))
        while True:
            action, answer = self.play_one(table)
            if action == "knock":
                self.example("knock", 200, "knocked", "Knocked: the defender answers", answer)
                break
        defender = self.view(table)["hand"]["turn"]
        defending = self.view(table, defender)
        self.example("getGame", 200, "defender", "The defender's view in the lay-off phase", defending)
        targets = defending["you"]["layoff_targets"]
        misfit = next((card for card, melds in targets.items() if 0 not in melds), None)
        if misfit is not None:  # invalid_layoff
            self.refused(lambda: self.act(table, defender, ActionType.LAYOFF, {"layoffs": [{"card": misfit, "meld": 0}]}))
        best = defending["you"]["best_layoff"]
        body = {"melds": best["melds"], "layoffs": best["layoffs"]}
        self.example("dryRunLayoff", 200, "best", "What the defender's best lay-down would leave",
                     self.games.dry_run_layoff(table.game_id, table.tokens[defender],
                                               rules.parse_action(ActionType.LAYOFF, body)))
        self.example("layoff", 200, "view", "The hand scored and the next one dealt",
                     self.act(table, defender, ActionType.LAYOFF, body))
        cards = self.view(table, 0)["you"]["hand"]
        self.example("analyzeHand", 200, "ten", "Ten cards", _analysis(cards))

    def short_match(self) -> None:
        """A classic match to 10 points: its end, and the rematch."""
        seats = (NewSeat("Ann"), NewSeat("Bob"))
        table, _ = self.create("classic", seats, "example-short", CLASSIC_SEED, SHORT_MATCH)
        self.play_until(table, lambda view: view["status"] == "finished")
        self.example("getGame", 200, "finished", "A finished match, as a player sees it", self.view(table, 0))
        self.refused(lambda: self.act(table, 0, ActionType.PASS))  # game_finished
        last_seq = self.games.events(table.game_id, None, 0, 0)["last_seq"]
        self.example("listEvents", 200, "late", "The last events of a match, as the public sees them",
                     self.games.events(table.game_id, None, last_seq - LATE_EVENTS, 0))
        self.over(table)
        for seat, status, name, summary in ((0, 201, "created", "The rematch, created by this call"),
                                            (1, 200, "joined", "The rematch another player created")):
            again = self.games.rematch(table.game_id, table.tokens[seat])
            self.example("rematch", status, name, summary,
                         {"game": again.view, "players": [vars(p) for p in again.players]})

    def over(self, table: _Table) -> None:
        """A finished match's record, replay and analysis."""
        record = self.records.record(table.game_id)
        self.example("getRecord", 200, "json", "The record of a short match", record)
        self.example("getRecord", 200, "text", "The same record as text (format=text)", self.records.text(table.game_id),
                     media="text/plain")
        self.example("getReplay", 200, "step", "The match after its third step",
                     self.records.replay(table.game_id, 3))
        self.refused(lambda: self.records.replay(table.game_id, record["steps"] + 1))  # step_out_of_range
        self.example("getAnalysis", 200, "analysis", "The strong policy's view of each decision",
                     self.records.analysis(table.game_id, "example-client"))

    def box(self) -> None:
        """A box match: creation, and the sitter's advice."""
        seats = (NewSeat("Ann"), NewSeat("Bob"), NewSeat("Cy"))
        table, created = self.create("box", seats, "example-box", BOX_SEED)
        self.example("createGame", 201, "box", "A box match between three people", created)
        public = self.view(table)
        sitter = next(p["seat"] for p in public["players"] if p["role"] == "sitter")
        self.example("advise", 200, "advised", "The sitter's advice, in the sitter's view", self.act(
            table, sitter, ActionType.ADVICE, {"message": "pass: the upcard does not help you",
                                               "action": {"type": "pass"}}))

    def managed(self) -> None:
        """What an integrator does with its API key: list, abort, re-issue, resign."""
        self.example("listPlayerGames", 200, "active", "The active matches of user-4711",
                     self.games.player_games(self.owner, "user-4711", False, None, 20))
        seats = (NewSeat("Ann"), NewSeat("Bob"))
        table, _ = self.create("classic", seats, "example-managed", CLASSIC_SEED)
        answer = self.games.reissue_token(table.game_id, 1, self.owner)
        self.example("reissueToken", 200, "reissued", "A new token for seat 1", {**answer, "token": REISSUED_TOKEN})
        self.example("resign", 200, "resigned", "Resigned: the match is over", self.act(table, 0, ActionType.RESIGN))
        table, _ = self.create("classic", seats, "example-aborted", CLASSIC_SEED)
        self.example("abort", 200, "aborted", "Aborted by the API key that created it",
                     self.games.abort(table.game_id, self.owner).body)


def _analysis(cards: list[str]) -> dict:
    return analyze_hand(cards, rules.Rules().knock_limit)

