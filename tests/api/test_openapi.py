"""The OpenAPI document: checked in, valid, complete, and served with offline docs."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from openapi_spec_validator import validate

from service.api.docs.routes import openapi_text
from tests.api.conftest import build_app

CHECKED_IN = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"
# Routes outside the API contract: Prometheus metrics and the UI's static files.
UNDOCUMENTED = {"/metrics", "/docs/start.js", "/docs/assets/<path:filename>", "/static/<path:filename>"}


@pytest.fixture(scope="module")
def app():
    return build_app(REDIS_URL="memory://")


@pytest.fixture(scope="module")
def spec(app) -> dict:
    return json.loads(openapi_text(app))


def test_the_checked_in_document_is_the_apps(app):
    assert CHECKED_IN.exists(), "openapi/openapi.json is missing: run `ginrummy openapi`"
    assert CHECKED_IN.read_text(encoding="utf-8") == openapi_text(app), (
        "openapi/openapi.json differs from the app's document: run `ginrummy openapi`"
    )


def test_the_document_is_valid_openapi(spec):
    validate(spec)


def test_it_is_served_as_checked_in(app):
    response = app.test_client().get("/openapi.json")
    assert response.status_code == 200 and response.mimetype == "application/json"
    assert response.get_data(as_text=True) == openapi_text(app)


def test_every_route_is_documented_and_nothing_else(app, spec):
    routes = {
        re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
        for rule in app.url_map.iter_rules()
        if rule.rule not in UNDOCUMENTED
    }
    assert routes == set(spec["paths"])


def test_every_field_and_parameter_has_a_description_and_an_example(spec):
    for name, schema in spec["components"]["schemas"].items():
        for field, prop in schema.get("properties", {}).items():
            assert prop.get("description"), f"{name}.{field} has no description"
            assert prop.get("example") is not None, f"{name}.{field} has no example"
    for path, item in spec["paths"].items():
        for parameter in item.get("parameters", []):
            assert parameter.get("description") and "example" in parameter, f"{path} {parameter['name']}"
        for method, operation in item.items():
            if method == "parameters":
                continue
            assert operation.get("summary") and operation.get("operationId"), f"{method} {path}"
            for parameter in operation.get("parameters", []):
                assert parameter.get("description"), f"{method} {path} {parameter['name']}"
                assert "example" in parameter or "example" in parameter["schema"], f"{method} {path} {parameter['name']}"


def test_errors_are_documented_as_problems(spec):
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            responses = operation["responses"]
            for status, response in responses.items():
                if status == "default" or status.startswith(("4", "5")):
                    assert list(response["content"]) == ["application/problem+json"], f"{method} {path} {status}"
                    assert response["content"]["application/problem+json"]["schema"] == {"$ref": "#/components/schemas/Problem"}
            assert "default" in responses, f"{method} {path}"


@pytest.mark.parametrize(
    ("path", "method", "statuses"),
    [
        ("/v1/games", "post", {"201", "400", "401", "413", "415", "422", "503"}),
        ("/v1/games/{game_id}", "get", {"200", "304", "401", "404", "422", "503"}),
        ("/v1/games/{game_id}/discard", "post", {"200", "400", "401", "403", "404", "409", "412", "413", "415", "422", "503"}),
        ("/v1/games/{game_id}/events", "get", {"200", "401", "404", "422", "503"}),
        ("/v1/games/{game_id}/hint", "get", {"200", "401", "403", "404", "409", "503"}),
        ("/v1/hands/analyze", "post", {"200", "400", "413", "415", "422"}),
        ("/readyz", "get", {"200", "503"}),
    ],
)
def test_each_endpoint_documents_its_answers(spec, path, method, statuses):
    assert statuses <= set(spec["paths"][path][method]["responses"])


def test_security_schemes_and_links(spec):
    schemes = spec["components"]["securitySchemes"]
    assert schemes["playerToken"] == {**schemes["playerToken"], "type": "http", "scheme": "bearer"}
    assert schemes["apiKey"]["name"] == "X-API-Key"
    assert spec["paths"]["/v1/games/{game_id}/draw"]["post"]["security"] == [{"playerToken": []}]
    links = spec["paths"]["/v1/games"]["post"]["responses"]["201"]["links"]
    assert links["draw"] == {"operationId": "draw", "parameters": {"game_id": "$response.body#/game/id"}}


def test_the_docs_page_uses_local_assets_only(app):
    client = app.test_client()
    page = client.get("/docs")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert "http://" not in html and "https://" not in html
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert "/docs/assets/swagger-ui-bundle.js" in assets
    for asset in assets:
        assert client.get(asset).status_code == 200, asset
    assert '"/openapi.json"' in client.get("/docs/start.js").get_data(as_text=True)
    assert client.get("/docs/assets/../../../etc/passwd").status_code == 404
