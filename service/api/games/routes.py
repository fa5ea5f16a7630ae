"""/v1/games: create a match, read it, play it, follow it. Thin views over ``GameService``."""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

import marshmallow as ma
from flask import Response, current_app, request
from flask.views import MethodView
from werkzeug.http import parse_etags

from service.api.context import current
from service.api.credentials import check_api_key, optional_token, required_token
from service.api.games.schemas import (
    CREATE_GAME_REQUEST_DOC,
    GAME_ID_PARAMETER,
    ActionHeadersSchema,
    AdviceRequestSchema,
    CreatedGameSchema,
    CreateGameRequestSchema,
    DiscardRequestSchema,
    DrawRequestSchema,
    EventsQuerySchema,
    EventsSchema,
    HintSchema,
    KnockRequestSchema,
    LayoffRequestSchema,
    PassRequestSchema,
    ViewHeadersSchema,
)
from service.api.games.view_schema import GameViewSchema
from service.api.parser import ApiBlueprint
from service.api.problems import documents_problems
from service.games import Reply, Retry, request_fingerprint

blp = ApiBlueprint(
    "games",
    __name__,
    url_prefix="/v1/games",
    description="Matches: create one, read it as a player or a spectator, play it, follow its events.",
)

ETAG = {
    "ETag": {
        "description": "The game's version, quoted; send it back in `If-Match` or `If-None-Match`",
        "schema": {"type": "string"},
        "example": '"17"',
    }
}
LOCATION = {
    "Location": {
        "description": "URL of the new game",
        "schema": {"type": "string"},
        "example": "/v1/games/g_3q5Jt0-8bJpYc2mXkq1WZA",
    }
}
PLAYER_ONLY = [{"playerToken": []}]
PLAYER_OR_PUBLIC = [{}, {"playerToken": []}]
API_KEY_IF_CONFIGURED = [{}, {"apiKey": []}]

READ_PROBLEMS = {
    401: ["unauthorized"],
    404: ["game_not_found"],
    422: ["invalid_request"],
    429: ["rate_limited"],
    503: ["store_unavailable"],
}
TURN_CONFLICTS = ["not_your_turn", "wrong_phase", "game_finished", "conflict"]


def _links(game_id: str, operations: Iterable[str]) -> dict:
    """OpenAPI links from a response holding the game id to the operations on that game."""
    return {
        operation: {"operationId": operation, "parameters": {"game_id": game_id}}
        for operation in operations
    }


GAME_OPERATIONS = ("getGame", "draw", "pass", "discard", "knock", "layoff", "advise", "listEvents", "getHint")


def _json(body: object, status: int = 200) -> Response:
    """A JSON answer that may hold a player's cards: never shared by caches between viewers."""
    response = current_app.json.response(body)
    response.status_code = status
    response.vary.add("Authorization")
    response.cache_control.private = True
    response.cache_control.no_cache = True
    return response


def _game_response(reply: Reply) -> Response:
    response = _json(reply.body, reply.status)
    response.set_etag(str(reply.version))
    return response


def _accepted_versions(if_match: str | None) -> frozenset[int] | None:
    """The versions an If-Match accepts; None when any will do (absent or ``*``).

    Quoted (``"17"``) and bare (``17``) tags both count; weak tags never match (RFC 9110).
    """
    if if_match is None:
        return None
    tags = parse_etags(if_match)
    if tags.star_tag:
        return None
    return frozenset(int(tag) for tag in tags.as_set() if tag.isascii() and tag.isdigit())


def _request_body() -> object:
    """The JSON body as sent (already checked by the parser); no body counts as ``{}``."""
    body = request.get_json(silent=True)
    return {} if body is None else body


def api_key_checked(view: Callable) -> Callable:
    """Check the service key before anything else (the body is not even parsed without it)."""

    @functools.wraps(view)
    def checked(*args, **kwargs):
        check_api_key(request, current().config.api_keys)
        return view(*args, **kwargs)

    return checked


def token_checked(view: Callable) -> Callable:
    """Refuse a request without a player token before its body is parsed."""

    @functools.wraps(view)
    def checked(*args, **kwargs):
        required_token(request)
        return view(*args, **kwargs)

    return checked


@blp.route("", endpoint="games")
class Games(MethodView):
    @api_key_checked
    @blp.doc(
        operationId="createGame",
        security=API_KEY_IF_CONFIGURED,
        requestBody={"content": {"application/json": {"schema": CREATE_GAME_REQUEST_DOC}}},
        responses={201: {"links": _links("$response.body#/game/id", GAME_OPERATIONS)}},
    )
    @blp.arguments(
        CreateGameRequestSchema(),
        example={"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}], "rules": {"gin_bonus": 25}},
    )
    @blp.response(201, CreatedGameSchema, headers=LOCATION)
    @documents_problems(
        blp,
        {
            400: ["invalid_request"],
            401: ["unauthorized"],
            413: ["payload_too_large"],
            415: ["unsupported_media_type"],
            422: ["invalid_request", "invalid_rules", "bots_not_supported"],
            429: ["rate_limited"],
            503: ["store_unavailable"],
        },
    )
    def post(self, body):
        """Create a match

        Cuts for the deal and deals the first hand. The answer holds the public view and one
        secret token per seat: hand each player theirs. When the server is configured with
        API keys, `X-API-Key` is needed.
        """
        created = current().games.create(body["variant"], body["players"], body.get("rules"), body.get("seed"))
        response = _json({"game": created.view, "players": [asdict(p) for p in created.players]}, 201)
        # The tokens are secrets: no cache may keep this answer.
        response.cache_control.no_store = True
        response.headers["Location"] = f"{blp.url_prefix}/{created.game_id}"
        return response


@blp.route("/<game_id>", endpoint="game", parameters=[GAME_ID_PARAMETER])
class Game(MethodView):
    @blp.doc(operationId="getGame", security=PLAYER_OR_PUBLIC)
    @blp.arguments(ViewHeadersSchema(), location="headers")
    @blp.response(200, GameViewSchema, headers=ETAG)
    @blp.alt_response(304, description="Not modified: the game is still at the version of If-None-Match", headers=ETAG)
    @documents_problems(blp, READ_PROBLEMS)
    def get(self, headers, game_id):
        """Read a match

        With a player token: that player's view (their cards, legal actions, hint material).
        Without: the public view. An unknown token is refused (401), never downgraded.
        """
        reply = current().games.view(game_id, optional_token(request))
        if request.if_none_match.contains_weak(str(reply.version)):
            not_modified = Response(status=304)
            not_modified.set_etag(str(reply.version))
            return not_modified
        return _game_response(reply)


@blp.route("/<game_id>/events", endpoint="events", parameters=[GAME_ID_PARAMETER])
class Events(MethodView):
    @blp.doc(operationId="listEvents", security=PLAYER_OR_PUBLIC)
    @blp.arguments(EventsQuerySchema(), location="query")
    @blp.response(200, EventsSchema)
    @documents_problems(blp, READ_PROBLEMS)
    def get(self, query, game_id):
        """Follow a match

        The events after `after`, redacted for the viewer (a player sees their own draws).
        With `wait`, the request is held until an event arrives or the time is up.
        """
        page = current().games.events(game_id, optional_token(request), query["after"], query["wait"])
        return _json(page)


@blp.route("/<game_id>/hint", endpoint="hint", parameters=[GAME_ID_PARAMETER])
class Hint(MethodView):
    @token_checked
    @blp.doc(operationId="getHint", security=PLAYER_ONLY)
    @blp.response(200, HintSchema)
    @documents_problems(blp, {**READ_PROBLEMS, 403: ["forbidden"], 409: ["game_finished"]})
    def get(self, game_id):
        """Suggest a move

        A suggested next action for your cards with a short reason; the box sitter gets the
        captain's.
        """
        return _json(current().games.hint(game_id, required_token(request)))


@dataclass(frozen=True)
class ActionEndpoint:
    """One POST action on a game: its body schema and its documentation."""

    name: str
    operation_id: str
    schema: type[ma.Schema]
    summary: str
    description: str
    conflicts: list[str]
    example: dict
    body_required: bool = True


ACTIONS = [
    ActionEndpoint(
        "draw", "draw", DrawRequestSchema, "Draw a card",
        "Take the top card of the stock or of the discard pile. During the upcard offer, "
        "`discard` takes the upcard.",
        TURN_CONFLICTS, {"source": "stock"},
    ),
    ActionEndpoint(
        "pass", "pass", PassRequestSchema, "Pass on the upcard",
        "Decline the upcard during the upcard offer. The body may be absent or `{}`.",
        TURN_CONFLICTS, {}, body_required=False,
    ),
    ActionEndpoint(
        "discard", "discard", DiscardRequestSchema, "Discard a card",
        "End your turn by discarding a card face up (not the card just taken from the pile).",
        TURN_CONFLICTS + ["card_not_in_hand", "cannot_discard_drawn_card"], {"card": "Kd"},
    ),
    ActionEndpoint(
        "knock", "knock", KnockRequestSchema, "Knock",
        "Discard and lay down your hand; your deadwood must not exceed the knock limit "
        "(0 is gin). Without `melds` the engine arranges your cards for the least deadwood.",
        TURN_CONFLICTS + ["card_not_in_hand", "cannot_discard_drawn_card", "deadwood_too_high", "invalid_melds"],
        {"discard": "Kd", "melds": [["As", "2s", "3s"], ["7d", "7c", "7h"], ["Td", "Jd", "Qd"]]},
    ),
    ActionEndpoint(
        "layoff", "layoff", LayoffRequestSchema, "Answer a knock",
        "The defender lays down melds and lays off cards on the knocker's melds (not against "
        "gin, unless `layoff_on_gin`). An empty body lets the engine choose the arrangement "
        "with the least deadwood. Scores the hand and deals the next one unless the match is over.",
        TURN_CONFLICTS + ["invalid_melds", "invalid_layoff"],
        {"melds": [["9h", "9s", "9d"]], "layoffs": [{"card": "4s", "meld": 0}]}, body_required=False,
    ),
    ActionEndpoint(
        "advice", "advise", AdviceRequestSchema, "Advise the captain",
        "Box variant: the sitter's advice, shown to the captain in the view and the events.",
        ["game_finished", "conflict"], {"message": "take the 9c", "action": {"type": "draw", "source": "discard"}},
    ),
]


def _action_view(endpoint: ActionEndpoint) -> Callable:
    """The documented view function of one action endpoint."""

    def act(headers: dict, action, game_id: str) -> Response:
        retry = Retry(
            accept_versions=_accepted_versions(headers.get("if_match")),
            idempotency_key=headers.get("idempotency_key"),
            fingerprint=request_fingerprint(request.method, request.path, _request_body()),
        )
        return _game_response(current().games.act(game_id, required_token(request), action, retry))

    act.__name__ = endpoint.operation_id
    act.__doc__ = f"{endpoint.summary}\n\n{endpoint.description}"
    documented = documents_problems(
        blp,
        {
            400: ["invalid_request"],
            401: ["unauthorized"],
            403: ["forbidden"],
            404: ["game_not_found"],
            409: endpoint.conflicts,
            412: ["version_mismatch"],
            413: ["payload_too_large"],
            415: ["unsupported_media_type"],
            422: ["invalid_request", "invalid_card", "idempotency_key_reused"],
            429: ["rate_limited"],
            503: ["store_unavailable"],
        },
    )(act)
    documented = blp.response(200, GameViewSchema, headers=ETAG, description="Your new view")(documented)
    documented = blp.arguments(endpoint.schema(), required=endpoint.body_required, example=endpoint.example)(documented)
    documented = blp.arguments(ActionHeadersSchema(), location="headers")(documented)
    documented = blp.doc(
        operationId=endpoint.operation_id,
        security=PLAYER_ONLY,
        responses={200: {"links": _links("$response.body#/id", GAME_OPERATIONS)}},
    )(documented)
    return token_checked(documented)


for _endpoint in ACTIONS:
    blp.route(
        f"/<game_id>/{_endpoint.name}",
        endpoint=_endpoint.operation_id,
        parameters=[GAME_ID_PARAMETER],
        methods=["POST"],
    )(_action_view(_endpoint))
