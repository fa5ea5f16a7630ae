"""/docs (Swagger UI) and /openapi.json. The UI's assets come from the installed
``swagger_ui_bundle`` package, so the docs work without any CDN or internet access.

The document's ``externalDocs`` names the rules as ``../docs/rules.md``: relative to the checked-in
document that is the repository's docs/rules.md, and from the page /docs it is /docs/rules.md,
which serves the same text (packaged with the service). The API guide, docs/api.md, and the
guides it links to (records.md, fairness.md, ratings.md) are served next to it, so the links between them
work on a running service too."""
from __future__ import annotations

import json
from importlib import resources

from flask import Blueprint, Flask, Response, current_app, render_template_string, send_from_directory, url_for
from flask.views import MethodView
from swagger_ui_bundle import swagger_ui_path

from service.api import document_text
from service.api.docs.schemas import HTML_PAGE, OPENAPI_DOCUMENT
from service.api.openapi import NO_CREDENTIALS
from service.api.parser import ApiBlueprint
from service.api.problems import documents_problems

blp = ApiBlueprint("docs", __name__, description="This documentation.")
# Static files of the UI: not part of the API, so not in the OpenAPI document.
assets = Blueprint("docs_assets", __name__)

ASSET_MAX_AGE_SECONDS = 3600
# The guides served under /docs, by name (files packaged with the service: links to docs/).
GUIDES = {name: resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")
          for name in ("rules", "api", "records", "fairness", "ratings")}
PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{{ title }}</title>
  <link rel="stylesheet" href="{{ url_for('docs_assets.asset', filename='swagger-ui.css') }}">
  <link rel="icon" type="image/png" href="{{ url_for('docs_assets.asset', filename='favicon-32x32.png') }}">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{{ url_for('docs_assets.asset', filename='swagger-ui-bundle.js') }}"></script>
  <script src="{{ url_for('docs_assets.start') }}"></script>
</body>
</html>
"""
# A script file rather than an inline script, so a strict Content-Security-Policy can stay on.
START_SCRIPT = """window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: %s,
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
};
"""


def openapi_text(app: Flask) -> str:
    """The app's OpenAPI document as checked in: sorted keys, indent 2, final newline."""
    return document_text(app)


@blp.route("/openapi.json", endpoint="openapi")
class OpenApiDocument(MethodView):
    @blp.doc(operationId="getOpenApi", security=NO_CREDENTIALS)
    @blp.response(200, OPENAPI_DOCUMENT, description="The OpenAPI document")
    @documents_problems(blp, {429: ["rate_limited"]})
    def get(self):
        """The OpenAPI document

        Describes every endpoint of this service; the same text is checked in as
        `openapi/openapi.json`.
        """
        return Response(openapi_text(current_app), mimetype="application/json")


# A browser's /docs/ is the same page (its links are absolute), not a 404.
@blp.route("/docs", endpoint="ui", strict_slashes=False)
class SwaggerUi(MethodView):
    @blp.doc(operationId="getDocs", security=NO_CREDENTIALS)
    @blp.response(200, HTML_PAGE, content_type="text/html", description="Swagger UI")
    @documents_problems(blp, {429: ["rate_limited"]})
    def get(self):
        """Interactive documentation

        Swagger UI over `/openapi.json`, served entirely by this service (works offline).
        """
        return Response(render_template_string(PAGE, title="Gin Rummy API"), mimetype="text/html")


@assets.route("/docs/start.js", endpoint="start")
def start_script() -> Response:
    script = START_SCRIPT % json.dumps(url_for("docs.openapi"))
    return Response(script, mimetype="text/javascript")


@assets.route("/docs/assets/<path:filename>", endpoint="asset")
def asset(filename: str) -> Response:
    return send_from_directory(swagger_ui_path, filename, max_age=ASSET_MAX_AGE_SECONDS)


@assets.route("/docs/<any(rules, api, records, fairness, ratings):name>.md", endpoint="guide")
def guide(name: str) -> Response:
    response = Response(GUIDES[name], mimetype="text/markdown")
    response.cache_control.max_age = ASSET_MAX_AGE_SECONDS
    response.cache_control.public = True
    return response
