"""URL paths as the client wrote them: a path is matched segment by segment, and only its
literal slashes separate segments.

The WSGI server hands the app the path percent-decoded, so ``/v1/games/<id>%2Fdiscard`` would
reach the discard route, and a proxy or firewall that matches the raw path would see another
URL than the one served. Werkzeug would also answer a path with doubled slashes with a redirect
to the merged path, built from the request's Host header, in HTML. Here both are what any other
path that matches no route is: 404, ``game_not_found`` where a game id stands (the docs: any
text in the place of an id), else ``not_found``.
"""
from __future__ import annotations

import flask
from werkzeug.exceptions import NotFound

from service.store.base import GameMissing

# Where the WSGI servers keep the request target as sent: gunicorn, then Werkzeug's own server.
RAW_TARGET_KEYS = ("RAW_URI", "REQUEST_URI")


def init_paths(app: flask.Flask) -> None:
    """Match paths as sent: no merging of doubled slashes, no encoded slash as a separator."""
    app.url_map.merge_slashes = False
    app.before_request_funcs.setdefault(None, []).insert(0, _refuse_encoded_slash)


def _refuse_encoded_slash() -> None:
    environ = flask.request.environ
    raw = next((environ[key] for key in RAW_TARGET_KEYS if environ.get(key)), "")
    if "%2f" not in raw.partition("?")[0].lower():
        return
    game_id = (flask.request.view_args or {}).get("game_id")
    if game_id is not None:
        raise GameMissing(game_id)
    raise NotFound()
