"""What identifies a request under its Idempotency-Key (creations, moves, tickets)."""
from __future__ import annotations

from flask import request

from service.games import request_fingerprint


def fingerprint_of(idempotency_key: str | None) -> str:
    """The fingerprint of this request's method, path and body ('' without a key: nothing to
    compare)."""
    if idempotency_key is None:
        return ""
    body = request.get_json(silent=True)  # already checked by the parser; no body counts as {}
    return request_fingerprint(request.method, request.path, {} if body is None else body)
