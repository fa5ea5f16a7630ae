"""URL paths as the client wrote them: a path is matched segment by segment, and only its
literal slashes separate segments.

The WSGI server hands the app the path percent-decoded, so ``/v1/games/<id>%2Fdiscard`` would
reach the discard route, and a proxy or firewall that matches the raw path would see another
URL than the one served. Werkzeug would also answer a path with doubled slashes with a redirect
to the merged path, built from the request's Host header, in HTML. Here both are what any other
path that matches no route is: 404, ``game_not_found`` where a game id stands (the docs: any
text in the place of an id), else ``not_found``. Where a route takes a whole path as one value
(an external id, ``<path:external_id>``), an encoded slash is that value's text, as clients
generated from the document send it: ``/v1/players/team%2Fann/ratings`` is team/ann's.
"""
from __future__ import annotations

from urllib.parse import unquote

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
    raw = next((environ[key] for key in RAW_TARGET_KEYS if environ.get(key)), "").partition("?")[0]
    if "%2f" not in raw.lower() or _in_path_value(raw):
        return
    game_id = (flask.request.view_args or {}).get("game_id")
    if game_id is not None:
        raise GameMissing(game_id)
    raise NotFound()


def _in_path_value(raw: str) -> bool:
    """Whether every encoded slash of ``raw`` lies in the route's one path-valued part, and that
    part, as written, is the value matched (so its encoded slashes did not make the match)."""
    rule, values = flask.request.url_rule, flask.request.view_args or {}
    parts = rule.rule.split("/") if rule else []
    at = [index for index, part in enumerate(parts) if part.startswith("<path:")]
    if len(at) != 1:
        return False
    name, after, written = parts[at[0]][len("<path:"):-1], len(parts) - at[0] - 1, raw.split("/")
    value, rest = written[at[0]:len(written) - after], written[:at[0]] + written[len(written) - after:]
    return not any("%2f" in part.lower() for part in rest) and unquote("/".join(value)) == values.get(name)
