"""Errors by kind: bad input (422), a move the rules forbid now (409), a seat that may never act (403)."""
from __future__ import annotations


class RulesError(Exception):
    """Base of every error the engine raises; ``code`` is stable for clients to branch on."""

    code = "invalid_request"

    def __init__(self, code: str, detail: str, field: str | None = None):
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.field = field


class InvalidInput(RulesError):
    """Syntactically or semantically malformed input: unknown card, bad rule option, wrong player count."""


class IllegalMove(RulesError):
    """A well-formed request that the rules forbid in the current state."""


class Forbidden(RulesError):
    """The seat may never perform this action (the sitter acting, a player advising)."""

    def __init__(self, detail: str):
        super().__init__("forbidden", detail)
