"""The metrics token check shared by the service's and the worker's ``GET /metrics``."""
from __future__ import annotations

import hmac

# A refused scrape: 401 with this problem and WWW-Authenticate challenge.
REFUSAL_CODE = "unauthorized"
REFUSAL_TITLE = "Missing or unknown credentials"
REFUSAL_DETAIL = "the metrics need the metrics token: Authorization: Bearer <token>"
METRICS_CHALLENGE = 'Bearer realm="metrics"'


def bearer_matches(header: str, token: str) -> bool:
    """Whether the Authorization ``header`` is ``Bearer <token>``; the comparison takes the
    same time wherever the given text first differs (its length only shows how long the
    given text is)."""
    scheme, _, given = header.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode("utf-8", "surrogatepass"), str(token).encode("utf-8", "surrogatepass"))
