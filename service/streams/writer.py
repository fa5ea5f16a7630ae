"""The feed's consumer that fills the API keys' streams (group ``streams``): every entry of a
key's matches and tickets is appended to that key's stream once, whatever re-reads happen (the
append is keyed by the feed entry's id). Entries of nobody's matches (a webhook only) are skipped."""
from __future__ import annotations

from collections.abc import Callable

from service.store.feed import FeedEntry
from service.store.streams import KeyStreams

GROUP = "streams"


class StreamWriter:
    group = GROUP

    def __init__(self, streams: Callable[[], KeyStreams]) -> None:
        self._streams = streams

    def apply(self, entry: FeedEntry) -> None:
        if not entry.owned:
            return
        self._streams().append_once(entry.owner, entry.id, entry.type, entry.body)
