"""/healthz (liveness) and /readyz (readiness: the game store answers)."""
from __future__ import annotations

from flask.views import MethodView

from service.api.context import current
from service.api.health.schemas import StatusSchema
from service.api.parser import ApiBlueprint
from service.api.problems import documents_problems

blp = ApiBlueprint("health", __name__, description="Probes for load balancers and orchestrators.")

OK = {"status": "ok"}


@blp.route("/healthz", endpoint="healthz")
class Liveness(MethodView):
    @blp.doc(operationId="liveness", security=[{}])
    @blp.response(200, StatusSchema)
    @documents_problems(blp, {})
    def get(self):
        """Liveness

        200 while the process can answer; it never looks at the store.
        """
        return OK


@blp.route("/readyz", endpoint="readyz")
class Readiness(MethodView):
    @blp.doc(operationId="readiness", security=[{}])
    @blp.response(200, StatusSchema)
    @documents_problems(blp, {503: ["store_unavailable"]})
    def get(self):
        """Readiness

        200 when the game store answers now (a Redis PING), else 503 `store_unavailable`.
        """
        current().games.check_ready()
        return OK
