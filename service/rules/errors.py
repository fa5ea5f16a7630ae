"""One error model for the whole service: every refusal is a ``GameError``.

A ``GameError`` carries what a client needs to branch and to explain: an HTTP ``status``
(fixed per class), a stable ``code``, a ``detail`` for people, the request ``field`` it is
about (if any) and ``params``, the values a client can put into its own translated message.
The engine raises the three kinds below; the service layer adds its own subclasses
(credentials, versions, the store) with the same shape.

Every code is declared once, where it is raised, with its status and title (``declare``, or
``GameError.titles``): the problem documents and the OpenAPI document learn a new code from
its declaration, with no central table to edit.
"""
from __future__ import annotations

from collections.abc import Mapping


# Code -> (title, the statuses it is answered with), in the order declared.
_DECLARED: dict[str, tuple[str, tuple[int, ...]]] = {}


def declare(status: int, code: str, title: str) -> None:
    """Declare that ``code`` is answered with ``status`` under ``title``: for a code raised
    with a class that does not declare it (a shared class, given a code of the raiser's own),
    or answered without a GameError (Flask's errors, the middleware's).

    A code has one title wherever it is answered, and each status of it is declared once:
    raises ValueError for another title, or for a status declared already."""
    known, statuses = _DECLARED.get(code, (title, ()))
    if known != title or status in statuses:
        raise ValueError(f"problem code {code!r} is declared already: {known!r}, answered with {statuses}")
    _DECLARED[code] = (title, (*statuses, status))


def title_of(code: str) -> str | None:
    """The declared title of ``code``; None for a code never declared."""
    declared = _DECLARED.get(code)
    return declared[0] if declared else None


def codes_answered_with(status: int) -> tuple[str, ...]:
    """Every code declared with ``status``, in the order declared."""
    return tuple(code for code, (_, statuses) in _DECLARED.items() if status in statuses)


class GameError(Exception):
    """Base of every refusal. ``status`` and the default ``code`` are class attributes.

    A subclass declares the codes it raises in ``titles`` (code: title), with its ``status``
    (see ``declare``)."""

    status = 422
    code = "invalid_request"
    titles: Mapping[str, str] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for code, title in cls.__dict__.get("titles", {}).items():
            declare(cls.status, code, title)

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

    titles = {"invalid_request": "The request is malformed", "invalid_card": "Not a card",
              "invalid_rules": "Invalid rule options"}


class IllegalMove(GameError):
    """A well-formed request that the rules forbid in the current state (409)."""

    status = 409
    titles = {
        "not_your_turn": "Not your turn",
        "wrong_phase": "Not possible in this phase",
        "game_finished": "The match is over",
        "card_not_in_hand": "Card not in hand",
        "cannot_discard_drawn_card": "Cannot discard the card just taken",
        "deadwood_too_high": "Deadwood too high to knock",
        "invalid_melds": "Invalid melds",
        "invalid_layoff": "Invalid lay-off",
        "game_not_finished": "The match has not finished",
        "advice_limit_reached": "Too much advice this hand",
    }


class Forbidden(GameError):
    """The seat may never do this: the sitter playing, a player advising (403)."""

    status = 403
    code = "forbidden"
    titles = {"forbidden": "Not allowed for this player"}
