"""/healthz (liveness) and /readyz (readiness: the game store answers)."""
from __future__ import annotations

from flask.views import MethodView

from service.api.context import current
from service.api.health.schemas import HealthSchema
from service.api.openapi import NO_CREDENTIALS
from service.api.parser import ApiBlueprint
from service.api.problems import documents_problems

blp = ApiBlueprint("health", __name__, description="Probes for load balancers and orchestrators.")

OK = {"status": "ok"}


@blp.route("/healthz", endpoint="healthz")
class Liveness(MethodView):
    @blp.doc(operationId="liveness", security=NO_CREDENTIALS)
    @blp.response(200, HealthSchema)
    @documents_problems(blp, {}, limited=False)
    def get(self):
        """Liveness

        200 while the process can answer; it never looks at the store.
        """
        return OK


@blp.route("/readyz", endpoint="readyz")
class Readiness(MethodView):
    @blp.doc(operationId="readiness", security=NO_CREDENTIALS)
    @blp.response(200, HealthSchema)
    @documents_problems(blp, {503: ["store_unavailable"]}, limited=False)
    def get(self):
        """Readiness

        200 when the game store answers now (a Redis PING), else 503 `store_unavailable`.
        """
        current().games.check_ready()
        return OK
