"""Schemathesis hooks for the schema fuzzing test (loaded by the CLI through SCHEMATHESIS_HOOKS).

Generated requests would otherwise always name games that do not exist and carry made-up
tokens, so they would only ever meet 404 and 401. These hooks:

- send half of the generated game ids to real games (created by the test up front, listed
  in the JSON file named by FUZZ_SEEDED_GAMES as ``{game_id: {"tokens": [...], "turn": seat}}``);
- remember the tokens of every game a generated ``createGame`` made (the stateful phase
  follows the OpenAPI links from that answer to the game's other operations), and the seat
  to move of every game from the views that come back;
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

SEEDED_GAMES_ENV = "FUZZ_SEEDED_GAMES"
CREATE_PATH = "/v1/games"
# Operations that need a player token (their only security is playerToken).
PLAYER_ONLY = ("draw", "pass", "discard", "knock", "layoff", "advise", "getHint")
# One request in this many acts or reads as a seat that is not to move; one discard or knock
# in this many keeps its generated card; one action in this many keeps its If-Match.
OTHER_SEAT_EVERY = 4
GENERATED_CARD_EVERY = 4
IF_MATCH_EVERY = 4
# The body field that names the card thrown, per operation.
CARD_FIELD = {"discard": "card", "knock": "discard"}


class Games:
    """Tokens, the seat to move and the last seen hands of each known game; shared by the
    CLI's worker threads."""

    def __init__(self, seeded: dict[str, dict]):
        self._lock = threading.Lock()
        self._tokens = {game_id: game["tokens"] for game_id, game in seeded.items()}
        self._turns = {game_id: game["turn"] for game_id, game in seeded.items()}
        self._hands: dict[tuple[str, int], list[str]] = {}
        self.seeded_ids = sorted(seeded)

    def add(self, game_id: str, tokens: list[str]) -> None:
        with self._lock:
            self._tokens[game_id] = tokens

    def note_view(self, view: dict) -> None:
        """Remember the seat to move and, for a player's view, that player's cards."""
        with self._lock:
            if isinstance(view.get("hand"), dict):
                self._turns[view["id"]] = view["hand"]["turn"]
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

    def hand_of(self, game_id: str, seat: int) -> list[str]:
        with self._lock:
            return self._hands.get((game_id, seat), [])


def _seeded() -> dict[str, dict]:
    path = os.environ.get(SEEDED_GAMES_ENV)
    return json.loads(Path(path).read_text()) if path else {}


GAMES = Games(_seeded())


@schemathesis.hook
def flatmap_path_parameters(context, path_parameters):
    """Half of the generated game ids become a real game's."""
    if not path_parameters or "game_id" not in path_parameters or not GAMES.seeded_ids:
        return st.just(path_parameters)
    real = st.sampled_from(GAMES.seeded_ids).map(lambda game_id: {**path_parameters, "game_id": game_id})
    return st.one_of(st.just(path_parameters), real)


@schemathesis.hook
def before_call(context, case, kwargs):
    """A real token on requests to known games that need one or came with one; a card of
    that player's hand in most discards and knocks."""
    game_id = (case.path_parameters or {}).get("game_id")
    if game_id is None:
        return
    operation = case.operation.definition.raw.get("operationId")
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
    """Learn the tokens of created games, and the seat to move and cards from every view."""
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
    if "id" in body and "version" in body:
        GAMES.note_view(body)
