"""/v1/games: create a match, read it, play it, follow it, and manage it. Thin views over ``GameService``."""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

import marshmallow as ma
from flask import Response, current_app, request
from flask.views import MethodView
from werkzeug.http import parse_etags

from service import rules
from service.api.context import current
from service.api.credentials import api_key_owner, optional_token, required_api_key_owner, required_token
from service.api.fields import holds_cards
from service.api.games.schemas import (
    CREATE_GAME_REQUEST_DOC,
    GAME_ID_PARAMETER,
    ActionHeadersSchema,
    AdviceRequestSchema,
    CreatedGameSchema,
    CreateGameRequestSchema,
    CreateHeadersSchema,
    DiscardRequestSchema,
    DrawRequestSchema,
    DryRunLayoffSchema,
    EventPageSchema,
    EventsQuerySchema,
    HintSchema,
    KnockRequestSchema,
    LayoffQuerySchema,
    LayoffRequestSchema,
    NewTokenSchema,
    PassRequestSchema,
    ResignRequestSchema,
    ViewHeadersSchema,
)
from service.api.games.view_schema import GameViewSchema
from service.api.idempotency import fingerprint_of
from service.api.openapi import API_KEY_ONLY, API_KEY_OR_ANONYMOUS, PLAYER_ONLY, documentation_only
from service.api.parser import ApiBlueprint
from service.api.problems import documents_problems
from service.games import Caller, Created, Reply, Retry, Unprocessable
from service.proxies import client_address

blp = ApiBlueprint(
    "games",
    __name__,
    url_prefix="/v1/games",
    description="Matches: create one, read it as a player or a spectator, play it, follow its events, manage it.",
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
        "description": "URL of the match",
        "schema": {"type": "string"},
        "example": "/v1/games/g_3q5Jt0-8bJpYc2mXkq1WZA",
    }
}
# Reading a game or its events declares no security of its own: the document's root default
# (an optional player token, see service/api/openapi.py) applies.

# What any operation on one game may answer; one that reads a query or headers adds 422.
READ_PROBLEMS = {
    401: ["unauthorized"],
    404: ["game_not_found"],
    410: ["game_expired"],
    429: ["rate_limited"],
    503: ["store_unavailable"],
}
INVALID_INPUT = {422: ["invalid_request"]}
TURN_CONFLICTS = ["not_your_turn", "wrong_phase", "game_finished", "conflict"]
WRITE_UNAVAILABLE = ["store_unavailable", "store_full"]


def _links(game_id: str, operations: Iterable[str]) -> dict:
    """OpenAPI links from a response holding the game id to the operations on that game."""
    return {
        operation: {"operationId": operation, "parameters": {"game_id": game_id}}
        for operation in operations
    }


GAME_OPERATIONS = ("getGame", "draw", "pass", "discard", "knock", "layoff", "dryRunLayoff", "advise", "resign", "listEvents",
                   "getHint")


PRIVATE = "private, no-cache"


def _json(body: object, status: int = 200) -> Response:
    """A JSON answer that may hold a player's cards: never shared by caches between viewers."""
    response = current_app.json.response(body)
    response.status_code = status
    return _private(response)


def _private(response: Response) -> Response:
    # A 304 repeats these too (RFC 9110, 15.4.5), or a cache could apply the 200's to the wrong viewer.
    response.headers["Vary"] = "Authorization"
    response.headers["Cache-Control"] = PRIVATE
    return response


def _game_response(reply: Reply) -> Response:
    response = _json(reply.body)
    response.set_etag(reply.etag)
    return response


def _created_response(created: Created, status: int) -> Response:
    response = _json({"game": created.view, "players": [asdict(p) for p in created.players]}, status)
    # The tokens are secrets: no cache may keep this answer.
    response.headers["Cache-Control"] = f"{PRIVATE}, no-store"
    response.headers["Location"] = f"{blp.url_prefix}/{created.game_id}"
    response.set_etag(str(created.version))
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


def _checked_first(check: Callable[[], object]) -> Callable[[Callable], Callable]:
    """Run ``check`` (a credential check) before anything else: the body is not even parsed
    for a request that lacks the credential."""

    def decorator(view: Callable) -> Callable:
        @functools.wraps(view)
        def checked(*args, **kwargs):
            check()
            return view(*args, **kwargs)

        return checked

    return decorator


def _owner() -> str | None:
    return api_key_owner(request, current().config.api_keys)


def _required_owner() -> str:
    return required_api_key_owner(request, current().config.api_keys)


@blp.route("", endpoint="games")
class Games(MethodView):
    @_checked_first(_owner)
    @blp.doc(
        operationId="createGame",
        security=API_KEY_OR_ANONYMOUS,
        requestBody={"content": {"application/json": {"schema": CREATE_GAME_REQUEST_DOC}}},
        responses={201: {"links": _links("$response.body#/game/id", GAME_OPERATIONS)}},
    )
    @blp.arguments(CreateHeadersSchema(), location="headers")
    @blp.arguments(
        CreateGameRequestSchema(),
        example={"variant": "classic", "players": [{"name": "Ann"}, {"name": "Robo", "bot": True}]},
    )
    @blp.response(201, CreatedGameSchema, headers=LOCATION)
    @documents_problems(
        blp,
        {
            400: ["invalid_request"],
            401: ["unauthorized"],
            403: ["seed_not_allowed"],
            413: ["payload_too_large"],
            415: ["unsupported_media_type"],
            422: ["invalid_request", "invalid_rules", "no_human_seat", "callback_not_allowed",
                  "idempotency_key_reused", "external_id_required", "duplicate_external_id"],
            429: ["rate_limited", "creation_quota_exceeded"],
            503: WRITE_UNAVAILABLE,
        },
    )
    def post(self, headers, new_game):
        """Create a match

        Cuts for the deal and deals the first hand (a bot to act first plays at once). The answer
        holds the public view and one secret token per person's seat: hand each player theirs.
        Needs `X-API-Key` unless the server allows anonymous creation.
        """
        config = current().config
        caller = Caller(_owner(), client_address(request), config.is_embedded)
        key = headers.get("idempotency_key")
        created = current().games.create(new_game, caller, key, fingerprint_of(key))
        return _created_response(created, 201)


@blp.route("/<game_id>", endpoint="game", parameters=[GAME_ID_PARAMETER])
class Game(MethodView):
    @blp.doc(operationId="getGame")
    @blp.arguments(ViewHeadersSchema(), location="headers")
    @blp.response(200, GameViewSchema, headers=ETAG)
    @blp.alt_response(304, description="Not modified: the game is still at the version of If-None-Match", headers=ETAG)
    @documents_problems(blp, {**READ_PROBLEMS, **INVALID_INPUT})
    def get(self, headers, game_id):
        """Read a match

        With a player token: that player's view (their cards, legal actions, hint material).
        Without: the public view. An unknown token is refused (401), never downgraded.
        """
        reply = current().games.view(game_id, optional_token(request))
        if request.if_none_match.contains_weak(reply.etag):
            not_modified = _private(Response(status=304))
            not_modified.set_etag(reply.etag)
            return not_modified
        return _game_response(reply)


@blp.route("/<game_id>/events", endpoint="events", parameters=[GAME_ID_PARAMETER])
class Events(MethodView):
    @blp.doc(operationId="listEvents")
    @blp.arguments(EventsQuerySchema(), location="query")
    @blp.response(200, EventPageSchema)
    @documents_problems(blp, {**READ_PROBLEMS, **INVALID_INPUT, 503: ["store_unavailable", "long_poll_capacity"]})
    def get(self, query, game_id):
        """Follow a match

        The events after `after`, redacted for the viewer (a player sees their own draws).
        With `wait`, the request is held until an event arrives or the time is up.
        """
        page = current().games.events(game_id, optional_token(request), query["after"], query["wait"])
        return _json(page)


@blp.route("/<game_id>/hint", endpoint="hint", parameters=[GAME_ID_PARAMETER])
class Hint(MethodView):
    @_checked_first(lambda: required_token(request))
    @blp.doc(operationId="getHint", security=PLAYER_ONLY)
    @blp.response(200, HintSchema)
    @documents_problems(blp, {**READ_PROBLEMS, 403: ["forbidden"], 409: ["game_finished"]})
    def get(self, game_id):
        """Suggest a move

        The standard computer player's suggestion for your cards, with a reason in English and
        as a code with parameters; the box sitter gets the captain's.
        """
        return _json(current().games.hint(game_id, required_token(request)))


@blp.route("/<game_id>/rematch", endpoint="rematch", parameters=[GAME_ID_PARAMETER])
class Rematch(MethodView):
    @_checked_first(lambda: required_token(request))
    @blp.doc(operationId="rematch", security=PLAYER_ONLY,
             responses={201: {"links": _links("$response.body#/game/id", GAME_OPERATIONS)}})
    @blp.response(201, CreatedGameSchema, headers=LOCATION,
                  description="The next match, created by this call, with your token")
    @blp.alt_response(200, schema=CreatedGameSchema, headers=LOCATION,
                      description="The next match, created earlier by another player's call, with your token")
    @documents_problems(blp, {**READ_PROBLEMS, 409: ["game_not_finished"], 503: WRITE_UNAVAILABLE})
    def post(self, game_id):
        """Play again

        For a player of a finished match (played out or resigned; not aborted): the next match
        between the same players (same seats, rules, bots, ids, metadata and callback; a fresh
        cut). The first call creates it; every player's call returns it with that player's own
        token (the other tokens are null; so is the caller's once the API key replaced it).
        """
        created = current().games.rematch(game_id, required_token(request))
        return _created_response(created, 201 if created.new else 200)


@blp.route("/<game_id>/abort", endpoint="abort", parameters=[GAME_ID_PARAMETER])
class Abort(MethodView):
    @_checked_first(_required_owner)
    @blp.doc(operationId="abort", security=API_KEY_ONLY)
    @blp.response(200, GameViewSchema, headers=ETAG, description="The aborted match, as the public sees it")
    @documents_problems(blp, {**READ_PROBLEMS, 403: ["forbidden"], 409: ["game_finished", "conflict"],
                              503: WRITE_UNAVAILABLE})
    def post(self, game_id):
        """Abort a match

        Ends the match at once with no winner (`status: aborted`). Only the API key that created
        the match may abort it.
        """
        return _game_response(current().games.abort(game_id, _required_owner()))


@blp.route("/<game_id>/players/<seat>/token", endpoint="token", parameters=[
    GAME_ID_PARAMETER,
    {"in": "path", "name": "seat", "description": "The seat whose token to replace", "example": 1,
     "schema": {"type": "integer", "minimum": 0, "maximum": 2}},
])
class SeatToken(MethodView):
    @_checked_first(_required_owner)
    @blp.doc(operationId="reissueToken", security=API_KEY_ONLY)
    @blp.response(200, NewTokenSchema)
    @documents_problems(blp, {**READ_PROBLEMS, **INVALID_INPUT, 403: ["forbidden"], 409: ["conflict"],
                              503: WRITE_UNAVAILABLE})
    def post(self, game_id, seat):
        """Replace a seat's token

        A new token for a person's seat, for a lost or leaked one: the old token stops working at
        once. Only the API key that created the match may ask.
        """
        answer = current().games.reissue_token(game_id, _seat_number(seat), _required_owner())
        response = _json(answer)
        response.cache_control.no_store = True
        return response


def _seat_number(path_part: str) -> int:
    """The seat a path names. Raises Unprocessable (422) for what is no seat number: the route
    takes any text, since an int converter would make ``-1`` or ``abc`` a 404 of no code."""
    if not (path_part.isascii() and path_part.isdigit() and len(path_part) <= 2):
        raise Unprocessable("the seat must be a seat number: 0, 1, or 2 in the box variant", code="invalid_request",
                            field="seat")
    return int(path_part)


@dataclass(frozen=True)
class ActionEndpoint:
    """One POST action on a game: its body schema and its documentation."""

    kind: rules.ActionType
    operation_id: str
    schema: type[ma.Schema]
    summary: str
    description: str
    conflicts: list[str]
    example: dict
    body_required: bool = True
    # Read but left out of the document: ``?dry_run=true`` answers a DryRunLayoff, not the
    # view the operation documents, so a typed client would have to tell the two apart.
    deprecated_query: type[ma.Schema] | None = None


ACTIONS = [
    ActionEndpoint(
        rules.ActionType.DRAW, "draw", DrawRequestSchema, "Draw a card",
        "Take the top card of the stock or of the discard pile. During the upcard offer, "
        "`discard` takes the upcard.",
        TURN_CONFLICTS, {"source": "stock"},
    ),
    ActionEndpoint(
        rules.ActionType.PASS, "pass", PassRequestSchema, "Pass on the upcard",
        "Decline the upcard during the upcard offer. The body may be absent or `{}`.",
        TURN_CONFLICTS, {}, body_required=False,
    ),
    ActionEndpoint(
        rules.ActionType.DISCARD, "discard", DiscardRequestSchema, "Discard a card",
        "End your turn by discarding a card face up (not the card just taken from the pile).",
        TURN_CONFLICTS + ["card_not_in_hand", "cannot_discard_drawn_card"], {"card": "Kd"},
    ),
    ActionEndpoint(
        rules.ActionType.KNOCK, "knock", KnockRequestSchema, "Knock",
        "Discard and lay down your hand; your deadwood must not exceed the knock limit "
        "(0 is gin). Without `melds` the engine arranges your cards for the least deadwood.",
        TURN_CONFLICTS + ["card_not_in_hand", "cannot_discard_drawn_card", "deadwood_too_high", "invalid_melds"],
        {"discard": "Kd", "melds": [["As", "2s", "3s"], ["7d", "7c", "7h"], ["Td", "Jd", "Qd"]]},
    ),
    ActionEndpoint(
        rules.ActionType.LAYOFF, "layoff", LayoffRequestSchema, "Answer a knock",
        "The defender lays down melds and lays off cards on the knocker's melds (not against "
        "gin, unless `layoff_on_gin`). An empty body lets the engine choose the arrangement "
        "with the least deadwood. Scores the hand and deals the next one unless the match is over. "
        "To check a lay-down without applying it, use `dryRunLayoff`.",
        TURN_CONFLICTS + ["card_not_in_hand", "invalid_melds", "invalid_layoff"],
        {"melds": [["9h", "9s", "9d"]], "layoffs": [{"card": "4s", "meld": 0}]}, body_required=False,
        deprecated_query=LayoffQuerySchema,
    ),
    ActionEndpoint(
        rules.ActionType.ADVICE, "advise", AdviceRequestSchema, "Advise the captain",
        "Box variant: the sitter's advice, shown to the captain in the view and the events.",
        ["game_finished", "conflict", "advice_limit_reached"],
        {"message": "take the 9c", "action": {"type": "draw", "source": "discard"}},
    ),
    ActionEndpoint(
        rules.ActionType.RESIGN, "resign", ResignRequestSchema, "Resign the match",
        "Give up: the match ends at once; totals stay as they stand, with no bonuses. The body may "
        "be absent or `{}`.",
        ["game_finished", "conflict"], {}, body_required=False,
    ),
]


def _action_view(endpoint: ActionEndpoint) -> Callable:
    """The documented view function of one action endpoint."""

    # Built once: a marshmallow schema costs more to build than to use.
    deprecated_query = endpoint.deprecated_query() if endpoint.deprecated_query is not None else None

    def act(headers, action, game_id: str) -> Response:
        token = required_token(request)
        if deprecated_query is not None and \
                blp.ARGUMENTS_PARSER.parse(deprecated_query, request, location="query")["dry_run"]:
            return _json(current().games.dry_run_layoff(game_id, token, action))
        key = headers.get("idempotency_key")
        retry = Retry(_accepted_versions(headers.get("if_match")), key, fingerprint_of(key))
        return _game_response(current().games.act(game_id, token, action, retry))

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
            410: ["game_expired"],
            412: ["version_mismatch"],
            413: ["payload_too_large"],
            415: ["unsupported_media_type"],
            422: ["invalid_request", *(["invalid_card"] if holds_cards(endpoint.schema) else []),
                  "idempotency_key_reused"],
            429: ["rate_limited"],
            503: WRITE_UNAVAILABLE,
        },
    )(act)
    documented = blp.response(200, GameViewSchema, headers=ETAG, description="Your new view")(documented)
    documented = blp.arguments(endpoint.schema(), required=endpoint.body_required, example=endpoint.example)(documented)
    documented = blp.arguments(ActionHeadersSchema(), location="headers")(documented)
    documented = documentation_only(blp.doc(
        operationId=endpoint.operation_id,
        security=PLAYER_ONLY,
        responses={200: {"links": _links("$response.body#/id", GAME_OPERATIONS)}},
    ), documented)
    return _checked_first(lambda: required_token(request))(documented)


@blp.route("/<game_id>/layoff/dry-run", endpoint="layoff_dry_run", parameters=[GAME_ID_PARAMETER])
class LayoffDryRun(MethodView):
    @_checked_first(lambda: required_token(request))
    @blp.doc(operationId="dryRunLayoff", security=PLAYER_ONLY)
    @blp.arguments(LayoffRequestSchema(), required=False, example={"melds": [["9h", "9s", "9d"]],
                                                                  "layoffs": [{"card": "4s", "meld": 0}]})
    @blp.response(200, DryRunLayoffSchema, description="What the lay-down would leave (nothing applied)")
    @documents_problems(blp, {
        400: ["invalid_request"],
        401: ["unauthorized"],
        403: ["forbidden"],
        404: ["game_not_found"],
        409: TURN_CONFLICTS + ["card_not_in_hand", "invalid_melds", "invalid_layoff"],
        410: ["game_expired"],
        413: ["payload_too_large"],
        415: ["unsupported_media_type"],
        422: ["invalid_request", "invalid_card"],
        429: ["rate_limited"],
        # A deadline that passed is settled (and saved) first, as by every read.
        503: WRITE_UNAVAILABLE,
    })
    def post(self, action, game_id):
        """Check a lay-down

        What the defender's lay-down would leave (melds, lay-offs, deadwood, who would score
        how much), with nothing applied: no version change, no event. A lay-down that `layoff`
        would refuse is refused the same way. The same body as `layoff`.
        """
        return _json(current().games.dry_run_layoff(game_id, required_token(request), action))


for _endpoint in ACTIONS:
    blp.route(
        f"/<game_id>/{_endpoint.kind.value}",
        endpoint=_endpoint.operation_id,
        parameters=[GAME_ID_PARAMETER],
        methods=["POST"],
    )(_action_view(_endpoint))
