"""Ratings of the embedded store: dicts behind one lock, with the Redis adapter's promises."""
from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field

from service.store.ratings import BoardRow, Change, HistoryEntry, RatingStore, StaleStandings, Standing
from service.store.ratings_redis import HISTORY_KEPT


@dataclass
class _Table:
    standings: dict[str, Standing] = field(default_factory=dict)
    histories: dict[str, list[HistoryEntry]] = field(default_factory=lambda: defaultdict(list))
    ranked: set[str] = field(default_factory=set)
    applied: dict[str, str] = field(default_factory=dict)


class MemoryRatings(RatingStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tables: dict[tuple[str, str], _Table] = defaultdict(_Table)

    def standings(self, scope: str, variant: str, external_ids: list[str]) -> list[Standing | None]:
        with self._lock:
            table = self._tables[(scope, variant)]
            return [table.standings.get(external_id) for external_id in external_ids]

    def apply(self, scope: str, variant: str, game_id: str, changes: list[Change], record: str) -> str:
        with self._lock:
            table = self._tables[(scope, variant)]
            if game_id in table.applied:
                return table.applied[game_id]
            for change in changes:
                if table.standings.get(change.after.external_id) != change.before:
                    raise StaleStandings(game_id)
            for change in changes:
                external_id = change.after.external_id
                table.standings[external_id] = change.after
                history = table.histories[external_id]
                history.insert(0, change.history)
                del history[HISTORY_KEPT:]
                (table.ranked.add if change.ranked else table.ranked.discard)(external_id)
            table.applied[game_id] = record
            return record

    def applied(self, scope: str, variant: str, game_id: str) -> str | None:
        with self._lock:
            return self._tables[(scope, variant)].applied.get(game_id)

    def history(self, scope: str, variant: str, external_id: str, start: int, count: int) -> list[HistoryEntry]:
        with self._lock:
            return list(self._tables[(scope, variant)].histories.get(external_id, [])[start:start + count])

    def rank(self, scope: str, variant: str, external_id: str) -> int | None:
        with self._lock:
            ordered = self._ordered(self._tables[(scope, variant)])
            return ordered.index(external_id) + 1 if external_id in ordered else None

    def board(self, scope: str, variant: str, start: int, count: int) -> list[BoardRow]:
        with self._lock:
            table = self._tables[(scope, variant)]
            ordered = self._ordered(table)[start:start + count]
            return [BoardRow(start + offset + 1, table.standings[external_id])
                    for offset, external_id in enumerate(ordered)]

    def board_size(self, scope: str, variant: str) -> int:
        with self._lock:
            return len(self._tables[(scope, variant)].ranked)

    @staticmethod
    def _ordered(table: _Table) -> list[str]:
        # Best first; equal ratings in reverse member order, as Redis' ZREVRANGE gives them.
        return sorted(table.ranked, key=lambda external_id: (table.standings[external_id].rating, external_id),
                      reverse=True)
