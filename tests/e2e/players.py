"""Players over real HTTP: a small client of the v1 API and a policy that picks legal moves.

Used by the end-to-end tests and by bench/load.py. The policy reads only what the API gives
the player to move (their view), like a real client would.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import requests

from tests.e2e.sessions import FreshSession
from tests.gunicorn_server import TEST_API_KEY

# Event types that are a player's action: each one raises the game's version by one.
ACTION_EVENTS = ("draw", "pass", "discard", "knock", "layoff", "advice")
REQUEST_TIMEOUT = 10.0


@dataclass(frozen=True)
class Move:
    """One action request: the path's last part and the JSON body (None: no body)."""

    action: str
    body: dict | None = None


@dataclass(frozen=True)
class Game:
    """A match created over HTTP: its id and each seat's token."""

    game_id: str
    tokens: tuple[str, ...]


@dataclass(frozen=True)
class Acknowledged:
    """A move the service answered 200: the version it produced, who made it, and what."""

    game_id: str
    version: int
    seat: int
    move: Move


def legal_move(view: dict, rng: random.Random, knock_when_possible: bool = True) -> Move | None:
    """A legal move for the viewer of ``view``, None when it is not their turn.

    Upcard offer: take or pass at random; draw: stock or pile at random (stock more often);
    discard: knock when the view says so (``knock_when_possible``), else throw the view's
    best discard; lay-off: let the engine choose.
    """
    you = view.get("you") or {}
    actions = you.get("legal_actions") or []
    if not actions:
        return None
    if "layoff" in actions:
        return Move("layoff")
    if "knock" in actions and knock_when_possible:
        return Move("knock", {"discard": you["best_discard"]})
    if "discard" in actions:
        return Move("discard", {"card": you["best_discard"]})
    if "pass" in actions and rng.random() < 0.5:
        return Move("pass")
    sources = you["draw_sources"]
    source = "stock" if "stock" in sources and (len(sources) == 1 or rng.random() < 0.7) else sources[-1]
    return Move("draw", {"source": source})


def next_move(view: dict, rng: random.Random) -> tuple[int, Move]:
    """(seat, move) for the seat to move of ``view``'s match: the viewer's legal move when it is
    theirs, else a move that needs no cards (the discard phase always belongs to the seat that
    just drew, so a client acting for both seats has that view at hand)."""
    hand = view["hand"]
    turn, phase = hand["turn"], hand["phase"]
    you = view.get("you")
    if you is not None and you["seat"] == turn:
        return turn, legal_move(view, rng)
    if phase == "upcard_offer":
        return turn, Move("pass") if rng.random() < 0.5 else Move("draw", {"source": "discard"})
    if phase == "draw":
        return turn, Move("draw", {"source": "stock"})
    return turn, Move("layoff")


def bearer(token: str | None) -> dict[str, str]:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


class ApiClient:
    """The v1 API on ``base_url`` over one keep-alive ``FreshSession`` (one per thread)."""

    def __init__(self, base_url: str, timeout: float = REQUEST_TIMEOUT):
        self.base_url = base_url.rstrip("/")
        self.session = FreshSession()
        self.timeout = timeout

    def close(self) -> None:
        self.session.close()

    def request(self, method: str, path: str, token: str | None = None, **kwargs) -> requests.Response:
        headers = {**bearer(token), **kwargs.pop("headers", {})}
        return self.session.request(method, self.base_url + path, headers=headers, timeout=self.timeout, **kwargs)

    def create(self, variant: str = "classic", names: list[str] | None = None, **extra) -> Game:
        """Create a match (``extra``: rules, seed). Raises AssertionError unless 201."""
        names = names or (["Ann", "Bob"] if variant == "classic" else ["Ann", "Bob", "Cy"])
        response = self.create_response(variant, names, **extra)
        assert response.status_code == 201, (response.status_code, response.text)
        body = response.json()
        return Game(body["game"]["id"], tuple(player["token"] for player in body["players"]))

    def create_response(self, variant: str, names: list[str], **extra) -> requests.Response:
        body = {"variant": variant, "players": [{"name": name} for name in names], **extra}
        return self.request("POST", "/v1/games", json=body, headers={"X-API-Key": TEST_API_KEY})

    def view(self, game_id: str, token: str | None = None, **kwargs) -> requests.Response:
        return self.request("GET", f"/v1/games/{game_id}", token, **kwargs)

    def act(self, game_id: str, token: str | None, move: Move, headers: dict | None = None) -> requests.Response:
        kwargs = {} if move.body is None else {"json": move.body}
        return self.request("POST", f"/v1/games/{game_id}/{move.action}", token, headers=headers or {}, **kwargs)

    def events(self, game_id: str, token: str | None = None, after: int = 0, wait: float = 0) -> requests.Response:
        return self.request("GET", f"/v1/games/{game_id}/events", token, params={"after": after, "wait": wait})

    def hint(self, game_id: str, token: str) -> requests.Response:
        return self.request("GET", f"/v1/games/{game_id}/hint", token)

    def mover_view(self, game: Game, guess: int | None = None) -> dict | None:
        """The view of the seat to move (None when the match is over). ``guess`` is the seat
        thought to move: when right, one request is enough. Raises AssertionError on any
        answer but 200."""
        view = self._view_json(game, guess)
        if view["hand"] is None:
            return None
        turn = view["hand"]["turn"]
        return view if turn == guess else self._view_json(game, turn)

    def _view_json(self, game: Game, seat: int | None) -> dict:
        response = self.view(game.game_id, None if seat is None else game.tokens[seat])
        assert response.status_code == 200, (response.status_code, response.text)
        return response.json()

    def play_turn(self, game: Game, rng: random.Random) -> Acknowledged | None:
        """Read the mover's view and play a legal move; the acknowledgement, or None when the
        match is over. Raises AssertionError unless the move is answered 200."""
        view = self.mover_view(game)
        if view is None:
            return None
        move = legal_move(view, rng)
        seat = view["you"]["seat"]
        response = self.act(game.game_id, game.tokens[seat], move)
        assert response.status_code == 200, (move, response.status_code, response.text)
        return Acknowledged(game.game_id, response.json()["version"], seat, move)
