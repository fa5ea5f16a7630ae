"""How a game is stored, and the view of it that a client reads.

The state text of a game is one compact JSON object: the engine's codec of the match and what
only the service knows about it: each seat's token hash, the integrator's ids and metadata,
the API key that created it, the callback URL, the rematch, the creation time and when each
seat last acted (for presence). Only this module reads or writes that layout.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from service import rules
from service.ratings.bots import BOT_RATINGS
from service.rules.evolve import evolve


@dataclass(frozen=True)
class Seat:
    """What the service keeps of a seat besides the engine's name and bot level."""

    token_hash: str | None  # None: a bot seat has no token
    external_id: str | None = None
    metadata: dict | None = None


@dataclass(frozen=True)
class Record:
    match: rules.Match
    seats: tuple[Seat, ...]
    owner: str | None = None  # key id of the API key that created the match
    metadata: dict | None = None
    callback_url: str | None = None
    rematch_id: str | None = None
    created_at_ms: int = 0
    rated: bool = False  # its result updates its players' ratings (service/ratings)
    acted_at: tuple[int, ...] = ()  # per seat: when it last acted (epoch seconds), 0 never; () none yet

    @classmethod
    def parse(cls, text: str) -> Record:
        """The record stored as ``text``. Raises ValueError/KeyError/UnknownFormat when it is not
        one (a fault of the server's data, answered as an internal error)."""
        found = _RECENT.get(text)
        if found is None:
            found = _RECENT.put(text, cls._decoded(text))
        return found

    @classmethod
    def _decoded(cls, text: str) -> Record:
        data = orjson.loads(text)
        match = rules.decode(data["m"])
        external = data.get("x") or [None] * match.seat_count
        seat_metadata = data.get("pm") or [None] * match.seat_count
        seats = tuple(Seat(token, ext, meta) for token, ext, meta in zip(data["t"], external, seat_metadata))
        return cls(match, seats, data.get("o"), data.get("md"), data.get("cb"), data.get("rm"), data.get("ca", 0),
                   bool(data.get("rt")), tuple(data.get("la") or ()))

    def dump(self) -> str:
        """The text to store; the next load of it finds this very record in ``_RECENT``."""
        text = self._encoded()
        _RECENT.put(text, self)
        return text

    def _encoded(self) -> str:
        data = {"m": rules.encode(self.match), "t": [seat.token_hash for seat in self.seats]}
        optional = {
            "x": [seat.external_id for seat in self.seats] if any(s.external_id for s in self.seats) else None,
            "pm": [seat.metadata for seat in self.seats] if any(s.metadata for s in self.seats) else None,
            "o": self.owner, "md": self.metadata, "cb": self.callback_url, "rm": self.rematch_id,
            "ca": self.created_at_ms or None, "rt": 1 if self.rated else None, "la": list(self.acted_at) or None,
        }
        data.update({key: value for key, value in optional.items() if value is not None})
        return orjson.dumps(data).decode()

    def with_match(self, match: rules.Match) -> Record:
        return evolve(self, match=match)

    def acted(self, match: rules.Match, seat: int, now: float) -> Record:
        """This record with ``match``, the match after ``seat`` acted at ``now`` (one copy, not two:
        every move makes it)."""
        acted = list(self.acted_at or (0,) * len(self.seats))
        acted[seat] = int(now)
        return evolve(self, match=match, acted_at=tuple(acted))

    def last_acted(self, seat: int) -> int:
        """When ``seat`` last acted (epoch seconds), 0 if never."""
        return self.acted_at[seat] if seat < len(self.acted_at) else 0

    @property
    def token_hashes(self) -> list[str | None]:
        return [seat.token_hash for seat in self.seats]

    def players(self) -> list[str]:
        """The player-index ids of the seats that carry an external id."""
        return [player_index_id(self.owner, seat.external_id) for seat in self.seats if seat.external_id]

    def shown_result(self) -> dict | None:
        """The match's result as every view shows it, None until it ends (``rating_changes``
        null: GameService.view fills in those applied since)."""
        result = self.match.result
        return None if result is None else {**result.as_dict(), "rating_changes": None}

    def view(self, game_id: str, viewer: int | None, online: Sequence[bool] | None = None) -> dict:
        """The view of this game for ``viewer``: the engine's, with what the service adds.

        ``online``: each seat's presence (``presence.online_seats``); None when nobody can be
        present yet (a match just created): the bots only."""
        view = {"id": game_id, **rules.view_for(self.match, viewer)}
        view["rated"] = self.rated
        for number, (player, seat) in enumerate(zip(view["players"], self.seats)):
            player["external_id"] = seat.external_id
            player["metadata"] = seat.metadata
            player["online"] = self.match.is_bot(number) if online is None else online[number]
            player["rating"] = None if player["level"] is None else BOT_RATINGS[player["level"]].rating
        view["result"] = self.shown_result()
        view["metadata"] = self.metadata
        view["rematch_id"] = self.rematch_id
        return view


class _Recent:
    """The records this process wrote or read last, by their exact stored text.

    A game's next request usually comes back to the process that answered its last one (a
    client keeps its connection), and finds its record here instead of decoding it again.
    Records are immutable and the key is the whole text, so a hit is exactly what is stored."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[str, Record] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> Record | None:
        with self._lock:
            found = self._entries.get(text)
            if found is not None:
                self._entries.move_to_end(text)
            return found

    def put(self, text: str, record: Record) -> Record:
        with self._lock:
            self._entries[text] = record
            self._entries.move_to_end(text)
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return record


RECENT_RECORDS = 512
_RECENT = _Recent(RECENT_RECORDS)


def player_index_id(owner: str | None, external_id: str) -> str:
    """The index id of ``external_id`` among the matches of one API key (scoped: another key's
    matches with the same external id are another player)."""
    return hashlib.sha256(f"{owner or '-'}\x1f{external_id}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
