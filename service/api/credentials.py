"""The credentials a request carries: a player token (Bearer) and the service's API key."""
from __future__ import annotations

from flask import Request, request

from service import tokens
from service.api.context import current
from service.games import Unauthorized

BEARER = "bearer"
API_KEY_CHALLENGE = 'ApiKey header="X-API-Key"'


def optional_token(request: Request) -> str | None:
    """The player token of ``Authorization: Bearer <token>``, or None without the header.

    Raises Unauthorized for an Authorization header in any other form: a client that sent
    credentials must learn they were refused, not silently get the public view.
    """
    header = request.environ.get("HTTP_AUTHORIZATION")  # request.headers' own source, without its lookups
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


def api_key_owner(request: Request, accepted: tuple[str, ...]) -> str | None:
    """The key id of the request's API key, or None when it sent none or the service has no
    keys (then creation is open to all, and a key adds nothing to check).

    Raises Unauthorized for a key that is not one of ``accepted``: a wrong key is an error,
    never the same as no key."""
    given = request.headers.get("X-API-Key")
    if given is None or not accepted:
        return None
    if not tokens.is_accepted_key(given, accepted):
        raise Unauthorized("this X-API-Key is not one of the service's keys", challenge=API_KEY_CHALLENGE)
    return tokens.key_id(given)


def required_api_key_owner(request: Request, accepted: tuple[str, ...]) -> str:
    """The key id of the request's API key; raises Unauthorized without a valid one."""
    if not accepted:
        raise Unauthorized("this needs an API key, and this service has none configured",
                           challenge=API_KEY_CHALLENGE)
    owner = api_key_owner(request, accepted)
    if owner is None:
        raise Unauthorized("this needs an API key: X-API-Key", challenge=API_KEY_CHALLENGE)
    return owner


def refuse_unknown_api_key() -> None:
    """Before every view of the API: an X-API-Key that is not one of the service's keys is
    refused (401), also where no key is needed, so that a client with a stale or mistyped key
    learns it at its first request rather than at its first creation."""
    if "HTTP_X_API_KEY" in request.environ:  # X-API-Key, read where request.headers reads it
        api_key_owner(request, current().config.api_keys)


def players_owner(request: Request) -> str | None:
    """Whose players a request about players (ratings, tickets, invites) acts on: the key id of
    its API key; None on an embedded store without API keys, whose players are one unscoped
    set. Raises Unauthorized anywhere else without a valid key."""
    config = current().config
    if not config.api_keys and config.is_embedded:
        return None
    return required_api_key_owner(request, config.api_keys)
