"""/v1/hands: stateless analysis of a hand."""
from __future__ import annotations

from flask import current_app
from flask.views import MethodView

from service.api.hands.schemas import AnalysisSchema, AnalyzeRequestSchema
from service.api.openapi import NO_CREDENTIALS
from service.api.parser import ApiBlueprint
from service.api.problems import documents_problems
from service.games import analyze_hand

blp = ApiBlueprint("hands", __name__, url_prefix="/v1/hands", description="Stateless hand analysis.")


@blp.route("/analyze", endpoint="analyze")
class Analyze(MethodView):
    @blp.doc(operationId="analyzeHand", security=NO_CREDENTIALS)
    @blp.arguments(AnalyzeRequestSchema(), example={"cards": ["As", "2s", "3s", "7d", "7c", "7h", "Td", "Jd", "Qd", "4c"]})
    @blp.response(200, AnalysisSchema)
    @documents_problems(
        blp,
        {
            400: ["invalid_request"],
            401: ["unauthorized"],
            413: ["payload_too_large"],
            415: ["unsupported_media_type"],
            422: ["invalid_request", "invalid_card"],
            429: ["rate_limited"],
        },
    )
    def post(self, body):
        """Analyze a hand

        The minimum deadwood of 10 cards and a meld arrangement that reaches it; with 11
        cards, the best discard and the figures after it.
        """
        response = current_app.json.response(analyze_hand(body["cards"], body["knock_limit"]))
        return response
