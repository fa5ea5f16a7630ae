"""Playing matches through the HTTP API in tests: a table of players, a simple policy,
the stored truth (decoded with the engine) and response checks against the OpenAPI document."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from flask import Flask
from flask.testing import FlaskClient
from openapi_schema_validator import OAS30Validator
from werkzeug.test import TestResponse

from service import rules
from service.api.context import EXTENSION
from service.api.docs.routes import openapi_text
from service.rules.cards import cards_of

PROBLEM = "application/problem+json"
API_KEY = "tests-api-key-3f9c1b"
# A fixed secret: a seed then deals the same cards in every test session (with the secret
# kept in Redis, each session's fresh prefix would draw another one).
SERVER_SECRET = "tests-server-secret-0123456789abcdef0123"


def store_of(app: Flask):
    return app.extensions[EXTENSION].store


def create(client: FlaskClient, variant: str = "classic", names: list[str] | None = None, **extra) -> TestResponse:
    names = names or (["Ann", "Bob"] if variant == "classic" else ["Ann", "Bob", "Cy"])
    return client.post("/v1/games", json={"variant": variant, "players": [{"name": n} for n in names], **extra})


@dataclass
class Snapshot:
    """What must not change when a request is refused: the public view and the raw record."""

    view: dict
    etag: str
    state: str
    version: int
    event_count: int


@dataclass
class Table:
    """One match seen through the API, with every seat's token."""

    app: Flask
    client: FlaskClient
    game_id: str
    tokens: list[str]
    requests: int = 0
    responses: list[tuple[str, str, TestResponse]] = field(default_factory=list)

    @classmethod
    def open(cls, app: Flask, client: FlaskClient, variant: str = "classic", **extra) -> Table:
        response = create(client, variant, **extra)
        assert response.status_code == 201, response.get_json()
        body = response.get_json()
        return cls(app, client, body["game"]["id"], [p["token"] for p in body["players"]])

    def auth(self, seat: int | None) -> dict:
        return {} if seat is None else {"Authorization": f"Bearer {self.tokens[seat]}"}

    def _sent(self, method: str, path: str, response: TestResponse) -> TestResponse:
        self.requests += 1
        self.responses.append((method, path, response))
        return response

    def act(self, seat: int | None, action: str, body: object = None, headers: dict | None = None, **kwargs) -> TestResponse:
        """POST an action as ``seat`` (None: without a token); ``body`` goes as JSON, or pass
        ``data=``/``content_type=`` for raw bodies."""
        path = f"/v1/games/{self.game_id}/{action}"
        if body is not None:
            kwargs["json"] = body
        response = self.client.post(path, headers={**self.auth(seat), **(headers or {})}, **kwargs)
        return self._sent("POST", path, response)

    def get(self, seat: int | None, suffix: str = "", headers: dict | None = None, **query) -> TestResponse:
        path = f"/v1/games/{self.game_id}{suffix}"
        response = self.client.get(path, headers={**self.auth(seat), **(headers or {})}, query_string=query)
        return self._sent("GET", path, response)

    def view(self, seat: int | None = None) -> dict:
        response = self.get(seat)
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    def match(self) -> rules.Match:
        """The match as stored (the truth, hidden cards included)."""
        return rules.decode(json.loads(store_of(self.app).load(self.game_id).state)["m"])

    def snapshot(self) -> Snapshot:
        public = self.client.get(f"/v1/games/{self.game_id}")
        loaded = store_of(self.app).load(self.game_id)
        events = store_of(self.app).events(self.game_id, 0)
        return Snapshot(public.get_json(), public.headers["ETag"], loaded.state, loaded.version, len(events))


def holding(match: rules.Match, seat: int) -> set[str]:
    hand = match.hand
    if hand is None or seat not in hand.seats:
        return set()
    return {str(card) for card in cards_of(hand.holding(seat))}


def stock(match: rules.Match) -> set[str]:
    return set() if match.hand is None else {str(card) for card in match.hand.stock}


def seat_to_act(view: dict) -> int:
    return view["hand"]["turn"]


def play_one(table: Table, explicit: bool = False) -> TestResponse:
    """One action by the seat to move: knock whenever possible, else discard the engine's best
    discard; draw as the hint says; answer a knock with the engine's best lay-off.

    ``explicit`` sends the melds and lay-offs in the body instead of leaving them to the engine.
    """
    public = table.view()
    seat = seat_to_act(public)
    you = table.view(seat)["you"]
    phase = public["hand"]["phase"]
    if phase == "layoff":
        if explicit:
            best = you["best_layoff"]
            return table.act(seat, "layoff", {"melds": best["melds"], "layoffs": best["layoffs"]})
        return table.act(seat, "layoff")
    if phase == "discard":
        if you["can_knock"]:
            body = {"discard": you["best_discard"]}
            if explicit:
                body["melds"] = you["melds"]
            return table.act(seat, "knock", body)
        return table.act(seat, "discard", {"card": you["best_discard"]})
    hint = table.get(seat, "/hint").get_json()
    if hint["action"]["type"] == "pass":
        return table.act(seat, "pass", {} if explicit else None)
    return table.act(seat, "draw", {"source": hint["action"]["source"]})


class SpecChecker:
    """Validates responses against the app's own OpenAPI document."""

    def __init__(self, app: Flask):
        self.spec = json.loads(openapi_text(app))

    def check(self, method: str, path: str, response: TestResponse) -> None:
        operation = self.spec["paths"][_template(path)][method.lower()]
        documented = self._resolved(operation["responses"].get(str(response.status_code))
                                    or operation["responses"]["default"])
        content = documented.get("content")
        if content is None:
            assert not response.data, f"{method} {path}: undocumented body"
            return
        assert response.mimetype in content, f"{method} {path}: {response.mimetype} not documented"
        schema = {**content[response.mimetype]["schema"], "components": self.spec["components"]}
        OAS30Validator(schema).validate(response.get_json() if response.is_json else response.get_data(as_text=True))
        for name, header in documented.get("headers", {}).items():
            if self._resolved(header).get("required"):
                assert name in response.headers, f"{method} {path}: header {name} missing"

    def _resolved(self, node: dict) -> dict:
        """``node``, or what its ``$ref`` (``#/components/<kind>/<name>``) names."""
        ref = node.get("$ref")
        if ref is None:
            return node
        _, _, kind, name = ref.split("/")
        return self.spec["components"][kind][name]


def _template(path: str) -> str:
    parts = path.split("/")
    if len(parts) > 3 and parts[1:3] == ["v1", "games"]:
        parts[3] = "{game_id}"
    if len(parts) > 3 and parts[1:3] == ["v1", "players"]:
        parts[3] = "{external_id}"
        if len(parts) > 5 and parts[4] == "ratings":
            parts[5] = "{variant}"
    if len(parts) == 4 and parts[1:3] == ["v1", "leaderboards"]:
        parts[3] = "{variant}"
    return "/".join(parts)
