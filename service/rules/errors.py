"""One error model for the whole service: every refusal is a ``GameError``.

A ``GameError`` carries what a client needs to branch and to explain: an HTTP ``status``
(fixed per class), a stable ``code``, a ``detail`` for people, the request ``field`` it is
about (if any) and ``params``, the values a client can put into its own translated message.
The engine raises the three kinds below; the service layer adds its own subclasses
(credentials, versions, the store) with the same shape.
"""
from __future__ import annotations

from collections.abc import Mapping


# Every code a subclass declares, with its status and title (see GameError.titles).
_DECLARED: dict[str, tuple[int, str]] = {}


class GameError(Exception):
    """Base of every refusal. ``status`` and the default ``code`` are class attributes.

    A subclass may declare the codes it raises with their titles in ``titles``: they are then
    known to the problem documents and the OpenAPI document without any central table to edit
    (``declared_codes``)."""

    status = 422
    code = "invalid_request"
    titles: Mapping[str, str] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for code, title in cls.__dict__.get("titles", {}).items():
            _DECLARED[code] = (cls.status, title)

    def __init__(self, detail: str, *, code: str | None = None, field: str | None = None,
                 params: Mapping[str, object] | None = None):
        super().__init__(detail)
        self.detail = detail
        if code is not None:
            self.code = code
        self.field = field
        self.params = dict(params or {})

    @property
    def headers(self) -> dict[str, str]:
        """HTTP headers the answer must carry (Retry-After, WWW-Authenticate...); none by default."""
        return {}


class InvalidInput(GameError):
    """Malformed input: an unknown card, a bad rule option, a wrong player count (422)."""


class IllegalMove(GameError):
    """A well-formed request that the rules forbid in the current state (409)."""

    status = 409


class Forbidden(GameError):
    """The seat may never do this: the sitter playing, a player advising (403)."""

    status = 403
    code = "forbidden"


def declared_codes() -> dict[str, tuple[int, str]]:
    """Code -> (status, title) of every code a GameError subclass declared."""
    return dict(_DECLARED)
