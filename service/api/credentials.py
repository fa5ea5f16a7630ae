"""The credentials a request carries: a player token (Bearer) and the optional service key."""
from __future__ import annotations

from collections.abc import Iterable

from flask import Request

from service import tokens
from service.games import Unauthorized

BEARER = "bearer"


def optional_token(request: Request) -> str | None:
    """The player token of ``Authorization: Bearer <token>``, or None without the header.

    Raises Unauthorized for an Authorization header in any other form: a client that sent
    credentials must learn they were refused, not silently get the public view.
    """
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != BEARER or not token:
        raise Unauthorized("send the player token as: Authorization: Bearer <token>")
    return token


def required_token(request: Request) -> str:
    """The player token; raises Unauthorized when there is none."""
    token = optional_token(request)
    if token is None:
        raise Unauthorized("this needs a player token: Authorization: Bearer <token>")
    return token


def check_api_key(request: Request, accepted: Iterable[str]) -> None:
    """Raise Unauthorized unless API keys are off or ``X-API-Key`` is one of them."""
    accepted = tuple(accepted)
    if accepted and not tokens.is_accepted_key(request.headers.get("X-API-Key"), accepted):
        raise Unauthorized("creating a game needs a valid X-API-Key header", challenge='ApiKey header="X-API-Key"')
