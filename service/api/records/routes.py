"""/v1/games/{game_id}/record, /replay and /analysis: thin views over ``RecordService``."""
from __future__ import annotations

from flask import Response, current_app, request
from flask.views import MethodView

from service.api.context import current
from service.api.games.schemas import GAME_ID_PARAMETER
from service.api.openapi import NO_CREDENTIALS
from service.api.parser import ApiBlueprint
from service.api.problems import documents_problems
from service.api.records.schemas import (MatchAnalysisSchema, RecordQuerySchema, RecordSchema, ReplayQuerySchema,
                                         ReplaySchema)
from service.middleware.rate_limit import client_identity
from service.records.service import RecordService
from service.store.errors import StoreError
from service.tokens import ServerSecret

blp = ApiBlueprint(
    "records",
    __name__,
    url_prefix="/v1/games",
    description="A match once it is over: its record (JSON or text), a replay of any step, and the strong "
                "policy's analysis of the people's decisions.",
)

TEXT = "text/plain"
# The problems of every read of a finished match.
OVER_PROBLEMS = {
    401: ["unauthorized"],
    404: ["game_not_found"],
    409: ["game_not_finished", "record_incomplete"],
    410: ["game_expired"],
    422: ["invalid_request"],
    429: ["rate_limited"],
    503: ["store_unavailable"],
}


def _records() -> RecordService:
    context = current()
    return RecordService(context.games.ctx, context.config.analysis_per_minute)


def _json(body: object) -> Response:
    return current_app.json.response(body)


@blp.route("/<game_id>/record", endpoint="record", parameters=[GAME_ID_PARAMETER])
class MatchRecord(MethodView):
    @blp.doc(operationId="getRecord", security=NO_CREDENTIALS, responses={200: {"content": {TEXT: {
        "schema": {"type": "string", "description": "The record in the text notation (docs/records.md)"}}}}})
    @blp.arguments(RecordQuerySchema(), location="query")
    @blp.response(200, RecordSchema, description="The record: JSON, or with `format=text` the text notation")
    @documents_problems(blp, OVER_PROBLEMS)
    def get(self, query, game_id):
        """Read a match's record

        For anyone, once the match is over (finished or aborted): everything needed to replay
        it exactly: the rules, the players, the revealed seeds of its fair shuffles, the cuts,
        every hand's dealt cards, upcard and stock order, every action in order (seat, fields,
        time, bot and timeout flags) and every result. `ginrummy verify` checks one.
        """
        if query["format"] == "text":
            return Response(_records().text(game_id), mimetype=TEXT)
        return _json(_records().record(game_id))


@blp.route("/<game_id>/replay", endpoint="replay", parameters=[GAME_ID_PARAMETER])
class MatchReplay(MethodView):
    @blp.doc(operationId="getReplay", security=NO_CREDENTIALS)
    @blp.arguments(ReplayQuerySchema(), location="query")
    @blp.response(200, ReplaySchema)
    @documents_problems(blp, {**OVER_PROBLEMS, 422: ["invalid_request", "step_out_of_range"]})
    def get(self, query, game_id):
        """Replay a match

        For anyone, once the match is over: the match as it stood after `step` actions, with
        every hand shown (each seat's own view) and the stock, for a replay viewer.
        """
        return _json(_records().replay(game_id, query["step"]))


@blp.route("/<game_id>/analysis", endpoint="analysis", parameters=[GAME_ID_PARAMETER])
class MatchAnalysis(MethodView):
    @blp.doc(operationId="getAnalysis", security=NO_CREDENTIALS)
    @blp.response(200, MatchAnalysisSchema)
    @documents_problems(blp, {**{status: codes for status, codes in OVER_PROBLEMS.items() if status != 422},
                              429: ["rate_limited", "analysis_quota_exceeded"],
                              503: ["store_unavailable", "store_full"]})
    def get(self, game_id):
        """Analyse a match

        For anyone, once the match is over: at each decision of a person, what the `strong`
        computer player would have done and whether they agree; per seat, the decisions, the
        share of agreement, the deadwood caught when the other knocked, undercuts suffered, and
        knocks and gins missed. Computed once, then kept with the match; computing analyses
        counts against a per-client allowance (`ANALYSIS_PER_MINUTE`).
        """
        return _json(_records().analysis(game_id, _client()))


def _client() -> str:
    """Who asks, as the rate limiter tells clients apart (a checked API key or token, else the address)."""
    return client_identity(request, current().config.api_keys, _secret)


def _secret() -> ServerSecret | None:
    try:
        return current().games.ctx.secret()
    except StoreError:
        return None  # then a token counts as its address, which errs towards limiting
