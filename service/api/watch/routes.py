"""/watch/{id}: a page that shows a match's public table live, and its files (package data).

The page is the service's own and loads nothing from elsewhere: its stylesheet and script come
from this blueprint, and the table is drawn from the spectator's stream
(``GET /v1/games/{id}/stream`` without a token), so it never holds a hidden card."""
from __future__ import annotations

from importlib import resources

from flask import Blueprint, Response, render_template_string, send_from_directory
from flask.views import MethodView

from service.api.context import current
from service.api.docs.schemas import HTML_PAGE
from service.api.games.schemas import GAME_ID_PARAMETER
from service.api.openapi import NO_CREDENTIALS
from service.api.parser import ApiBlueprint
from service.api.problems import documents_problems

blp = ApiBlueprint("watch", __name__, description="A page to watch a match live, as a spectator.")
# The page's stylesheet and script: not part of the API, so not in the OpenAPI document.
assets = Blueprint("watch_assets", __name__)

STATIC = resources.files(__package__).joinpath("static")
PAGE = STATIC.joinpath("watch.html").read_text(encoding="utf-8")
ASSET_MAX_AGE_SECONDS = 3600


# A shared link may gain a trailing slash; the page's own links are absolute, so it works there too.
@blp.route("/watch/<game_id>", endpoint="page", parameters=[GAME_ID_PARAMETER], strict_slashes=False)
class WatchPage(MethodView):
    @blp.doc(operationId="watchGame", security=NO_CREDENTIALS)
    @blp.response(200, HTML_PAGE, content_type="text/html", description="The watch page")
    @documents_problems(blp, {404: ["game_not_found"], 410: ["game_expired"], 429: ["rate_limited"],
                              503: ["store_unavailable"]})
    def get(self, game_id):
        """Watch a match

        A page for people: the match's public table (names, scores, hand sizes, the discard
        pile, the last actions, each hand's result, the end), drawn live from the spectator's
        stream. Share its URL with anyone who may watch; it shows nothing a spectator may not see.
        """
        current().games.current(game_id)  # a link to no match, or an expired one, says so at once
        page = render_template_string(PAGE, game_id=game_id, api=f"/v1/games/{game_id}")
        response = Response(page, mimetype="text/html")
        response.cache_control.no_cache = True
        return response


@assets.route("/watch/assets/<any('watch.css', 'watch.js'):filename>", endpoint="asset")
def asset(filename: str) -> Response:
    with resources.as_file(STATIC) as folder:
        return send_from_directory(folder, filename, max_age=ASSET_MAX_AGE_SECONDS)
