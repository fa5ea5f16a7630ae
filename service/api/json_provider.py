"""Flask's JSON through orjson: every answer carries a view or an event page, and serialising
them is a good part of a request's work. Bodies are JSON-native values (the engine writes
enums and cards as their strings), kept in insertion order: ``id`` first, as documented.
What orjson cannot write (an integer beyond 64 bits) goes through the standard library."""
from __future__ import annotations

from typing import Any

import orjson
from flask import Response
from flask.json.provider import DefaultJSONProvider


class OrjsonProvider(DefaultJSONProvider):
    """Flask's provider with orjson's dumps and loads (compact, keys in insertion order)."""

    sort_keys = False

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        return self._bytes(obj).decode()

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return orjson.loads(s)

    def response(self, *args: Any, **kwargs: Any) -> Response:
        obj = self._prepare_response_obj(args, kwargs)
        return self._app.response_class(self._bytes(obj), mimetype=self.mimetype)

    def _bytes(self, obj: Any) -> bytes:
        try:
            return orjson.dumps(obj, default=self.default)
        except TypeError:
            return super().dumps(obj, separators=(",", ":")).encode()
