"""Schemathesis hooks for the schema fuzzing test (loaded by the CLI through SCHEMATHESIS_HOOKS).

Generated requests would otherwise always name games that do not exist and carry made-up
tokens, so they would only ever meet 404 and 401. These hooks:

- send half of the generated game ids to real games (created by the test up front, listed
  in the JSON file named by FUZZ_SEEDED_GAMES as ``{game_id: {"tokens": [...], "turn": seat,
  "phase": phase, "hands": [[card, ...] per seat]}}``), and three quarters of a move's, two
  of them to a game last seen in the phase where that move is legal;
- remember the tokens of every game a generated ``createGame`` made (the stateful phase
  follows the OpenAPI links from that answer to the game's other operations), and the seat
  to move of every game from the views that come back;
- put the test server's API key (tests/gunicorn_server.py) on the operations the document
  secures with ``apiKey``, and on ``createGame``: the document is the quick start's, where
  anyone may create, but the test server keeps games in Redis, where creating needs a key;
- put a real player token on each request for a known game that carries a token: usually
  the seat to move, sometimes another seat, so that the rules engine is reached;
- make most generated discards and knocks name a card of the acting player's hand (as last
  seen in their view), empty half of the lay-off bodies (the engine then chooses), and drop
  most generated If-Match headers (a random version never matches), so that matches move
  on to knocks, lay-offs and the next hands.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import schemathesis
from hypothesis import strategies as st

from tests.gunicorn_server import TEST_API_KEY

SEEDED_GAMES_ENV = "FUZZ_SEEDED_GAMES"
CREATE_PATH = "/v1/games"
CREATE_OPERATION = "createGame"
API_KEY_HEADER = "X-API-Key"
# Operations that need a player token (their only security is playerToken).
PLAYER_ONLY = ("draw", "pass", "discard", "knock", "layoff", "advise", "getHint")
# One request in this many acts or reads as a seat that is not to move; one discard or knock
# in this many keeps its generated card; one action in this many keeps its If-Match.
OTHER_SEAT_EVERY = 4
GENERATED_CARD_EVERY = 4
IF_MATCH_EVERY = 4
# The body field that names the card thrown, per operation.
CARD_FIELD = {"discard": "card", "knock": "discard"}
# The phase in which each move is legal: most of the moves aimed at seeded games go to games
# last seen in it (a move aimed at any seeded game met its phase about one time in nine, and a
# run once had not a single draw accepted).
PHASE_OF_MOVE = {"discard": "discard", "knock": "discard", "draw": "draw", "pass": "upcard_offer",
                 "layoff": "layoff"}


class Games:
    """Tokens, the seat to move and the last seen hands of each known game; shared by the
    CLI's worker threads."""

    def __init__(self, seeded: dict[str, dict]):
        self._lock = threading.Lock()
        self._tokens = {game_id: game["tokens"] for game_id, game in seeded.items()}
        self._turns = {game_id: game["turn"] for game_id, game in seeded.items()}
        self._phases = {game_id: game.get("phase") for game_id, game in seeded.items()}
        self._hands: dict[tuple[str, int], list[str]] = {
            (game_id, seat): cards for game_id, game in seeded.items()
            for seat, cards in enumerate(game.get("hands", []))}
        self.seeded_ids = sorted(seeded)

    def add(self, game_id: str, tokens: list[str]) -> None:
        with self._lock:
            self._tokens[game_id] = tokens

    def replace_token(self, game_id: str, seat: int, token: str) -> None:
        """A seat's token was re-issued: the old one no longer works."""
        with self._lock:
            tokens = self._tokens.get(game_id)
            if tokens is not None and 0 <= seat < len(tokens):
                self._tokens[game_id] = [token if n == seat else old for n, old in enumerate(tokens)]

    def note_view(self, view: dict) -> None:
        """Remember the seat to move and, for a player's view, that player's cards."""
        with self._lock:
            if isinstance(view.get("hand"), dict):
                self._turns[view["id"]] = view["hand"]["turn"]
                self._phases[view["id"]] = view["hand"]["phase"]
            else:
                self._phases[view["id"]] = None
            you = view.get("you")
            if isinstance(you, dict):
                self._hands[(view["id"], you["seat"])] = list(you["hand"])

    def seat_for(self, game_id: str, pick: int) -> tuple[int, str] | None:
        """(seat, token) to act or read as: the mover mostly, another seat now and then."""
        with self._lock:
            tokens = self._tokens.get(game_id)
            turn = self._turns.get(game_id, 0)
        if tokens is None:
            return None
        seat = turn if pick % OTHER_SEAT_EVERY else pick // OTHER_SEAT_EVERY % len(tokens)
        return seat, tokens[seat]

    def in_phase(self, phase: str) -> list[str]:
        """The seeded games last seen in ``phase`` (the phase may have moved on since)."""
        with self._lock:
            return [game_id for game_id in self.seeded_ids if self._phases.get(game_id) == phase]

    def hand_of(self, game_id: str, seat: int) -> list[str]:
        with self._lock:
            return self._hands.get((game_id, seat), [])


def _seeded() -> dict[str, dict]:
    path = os.environ.get(SEEDED_GAMES_ENV)
    return json.loads(Path(path).read_text()) if path else {}


GAMES = Games(_seeded())


# Abort (with the API key) and resign (with a player's token) end a match: aimed at the seeded
# games they would end most of them early and little would be played. They meet the matches
# the fuzzer creates itself (the stateful phase follows the links from createGame to them).
NOT_AIMED_AT_SEEDED = ("abort", "resign")


@schemathesis.hook
def flatmap_path_parameters(context, path_parameters):
    """Half of the generated game ids become a real game's."""
    operation = context.operation.definition.raw.get("operationId") if context.operation else None
    if (not path_parameters or "game_id" not in path_parameters or not GAMES.seeded_ids
            or operation in NOT_AIMED_AT_SEEDED):
        return st.just(path_parameters)
    real = st.sampled_from(GAMES.seeded_ids).map(lambda game_id: {**path_parameters, "game_id": game_id})
    if operation in PHASE_OF_MOVE:
        # A quarter generated, a quarter any seeded game, half a game where the move is legal.
        aimed = in_phase_when_drawn(PHASE_OF_MOVE[operation], path_parameters)
        return st.one_of(st.just(path_parameters), real, aimed, aimed)
    return st.one_of(st.just(path_parameters), real)


def in_phase_when_drawn(phase: str, path_parameters: dict):
    """Path parameters naming a seeded game in ``phase`` as last seen when the example is
    generated (the strategy is built once per operation, and the games move on meanwhile:
    a list taken then ran dry after the first few moves), or any seeded game when none is."""
    def aimed(number: int) -> dict:
        games = GAMES.in_phase(phase) or GAMES.seeded_ids
        return {**path_parameters, "game_id": games[number % len(games)]}

    return st.integers(min_value=0, max_value=1 << 16).map(aimed)


def needs_api_key(definition: dict) -> bool:
    """Whether the operation takes the API key (``apiKey`` among its security requirements)."""
    requirements = definition.get("security") or []
    return definition.get("operationId") == CREATE_OPERATION or any("apiKey" in r for r in requirements)


@schemathesis.hook
def before_call(context, case, kwargs):
    """The API key where the operation takes one; a real token on requests to known games that
    need one or came with one; a card of that player's hand in most discards and knocks."""
    definition = case.operation.definition.raw
    if needs_api_key(definition):
        case.headers = {**(case.headers or {}), API_KEY_HEADER: TEST_API_KEY}
    game_id = (case.path_parameters or {}).get("game_id")
    if game_id is None:
        return
    operation = definition.get("operationId")
    headers = dict(case.headers or {})
    if operation not in PLAYER_ONLY and "Authorization" not in headers:
        return  # a public read stays public
    pick = int(hashlib.sha256(case.id.encode()).hexdigest(), 16)
    chosen = GAMES.seat_for(game_id, pick)
    if chosen is None:
        return
    seat, token = chosen
    headers["Authorization"] = f"Bearer {token}"
    if pick // GENERATED_CARD_EVERY % IF_MATCH_EVERY:
        headers.pop("If-Match", None)
    case.headers = headers
    field = CARD_FIELD.get(operation)
    hand = GAMES.hand_of(game_id, seat)
    if field and hand and isinstance(case.body, dict) and pick % GENERATED_CARD_EVERY:
        body = {**case.body, field: hand[pick % len(hand)]}
        if operation == "knock" and pick % 2:
            body.pop("melds", None)  # let the engine arrange the hand
        case.body = body
    if operation == "layoff" and isinstance(case.body, dict) and pick % 2:
        case.body = {}  # the engine's best lay-off


@schemathesis.hook
def after_call(context, case, response):
    """Learn the tokens of created games and re-issued seats, and the seat to move and cards
    from every view."""
    if response.status_code not in (200, 201):
        return
    try:
        body = response.json()
    except ValueError:
        return
    if not isinstance(body, dict):
        return
    if response.status_code == 201 and case.method.upper() == "POST" and case.path == CREATE_PATH:
        GAMES.add(body["game"]["id"], [player["token"] for player in body["players"]])
        body = body["game"]
    if case.operation.definition.raw.get("operationId") == "reissueToken" and "token" in body:
        GAMES.replace_token(case.path_parameters["game_id"], body["seat"], body["token"])
    if "id" in body and "version" in body:
        GAMES.note_view(body)
