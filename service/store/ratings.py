"""The ratings port: players' ratings per scope (an API key) and variant, their history and the
leaderboard, and the once-only application of a match's rating period.

Everything of one scope and variant is kept together (on Redis: one hash slot), so that
applying a match's changes to all of its players, their histories, the leaderboard and the
mark that the match was applied is one atomic step, on a single Redis and on a cluster.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass


@dataclass(frozen=True)
class Standing:
    """A player's rating and record in one scope and variant (floats as computed, unrounded)."""

    external_id: str
    name: str
    rating: float
    rd: float
    volatility: float
    games: int = 0
    wins: int = 0
    losses: int = 0
    draws: int = 0


@dataclass(frozen=True)
class HistoryEntry:
    game_id: str
    at: str
    rating: float
    rd: float
    delta: float


@dataclass(frozen=True)
class Change:
    """A player's new standing after a match, with what it was computed from (``games_before``:
    the compare-and-set that keeps two matches from both starting from the same rating)."""

    before: Standing | None  # None: the player's first rated match in this variant
    after: Standing
    history: HistoryEntry
    ranked: bool  # on the leaderboard after it (not provisional)


@dataclass(frozen=True)
class BoardRow:
    rank: int
    standing: Standing


class StaleStandings(Exception):
    """A player's standing changed between the read and the write: compute again."""


class RatingStore(abc.ABC):
    """Every method raises StoreError when the backend fails."""

    @abc.abstractmethod
    def standings(self, scope: str, variant: str, external_ids: list[str]) -> list[Standing | None]:
        """The current standings (None: never rated), in the order asked."""

    @abc.abstractmethod
    def apply(self, scope: str, variant: str, game_id: str, changes: list[Change], record: str) -> str:
        """Apply a match's changes once: returns ``record`` when this call applied them, or the
        record kept by the call that did (the match was applied before: nothing changes).

        Raises StaleStandings when a player's standing is no longer ``before``."""

    @abc.abstractmethod
    def applied(self, scope: str, variant: str, game_id: str) -> str | None:
        """The record kept when the match was applied, or None."""

    @abc.abstractmethod
    def history(self, scope: str, variant: str, external_id: str, start: int, count: int) -> list[HistoryEntry]:
        """Rated matches of a player, newest first, from position ``start``."""

    @abc.abstractmethod
    def rank(self, scope: str, variant: str, external_id: str) -> int | None:
        """The 1-based rank on the leaderboard; None when not on it (provisional, unknown)."""

    @abc.abstractmethod
    def board(self, scope: str, variant: str, start: int, count: int) -> list[BoardRow]:
        """Leaderboard rows from 0-based position ``start``, best first."""

    @abc.abstractmethod
    def board_size(self, scope: str, variant: str) -> int:
        """How many players are on the leaderboard."""
