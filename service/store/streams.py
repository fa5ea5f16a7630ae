"""The API keys' streams: every announcement of a key's matches and tickets (the webhooks'
payloads), kept in order for a while so that a backend that cannot receive webhooks reads them
as Server-Sent Events and resumes where it stopped (``GET /v1/stream``).

Each entry is appended once (keyed by the feed entry it comes from: a consumer that reads a
feed entry twice appends nothing the second time), gets an id that grows (``<ms>-<n>``, as
Redis streams number them), and is dropped once older than the retention.
"""
from __future__ import annotations

import abc
import re
from dataclasses import dataclass

STREAM_ID = re.compile(r"[0-9]{1,15}-[0-9]{1,9}")


@dataclass(frozen=True)
class StreamEntry:
    id: str
    type: str
    body: str


def is_stream_id(text: str) -> bool:
    return STREAM_ID.fullmatch(text) is not None


def id_order(stream_id: str) -> tuple[int, int]:
    milliseconds, _, sequence = stream_id.partition("-")
    return int(milliseconds), int(sequence)


class KeyStreams(abc.ABC):
    """Every method raises StoreError when the backend fails."""

    @abc.abstractmethod
    def append_once(self, scope: str, source_id: str, type: str, body: str) -> bool:
        """Append to ``scope``'s stream unless ``source_id`` was appended already; whether it was now."""

    @abc.abstractmethod
    def after(self, scope: str, after: str | None, count: int) -> list[StreamEntry]:
        """Up to ``count`` entries after the id ``after`` (None: from the oldest kept), oldest first."""

    @abc.abstractmethod
    def last_id(self, scope: str) -> str | None:
        """The newest entry's id (None: empty)."""

    @abc.abstractmethod
    def wait(self, scope: str, after: str | None, count: int, timeout: float) -> list[StreamEntry]:
        """Like ``after``, waiting up to ``timeout`` seconds while there is nothing (no traffic
        to the backend while waiting)."""
