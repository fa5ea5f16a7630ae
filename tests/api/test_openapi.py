"""The OpenAPI document: checked in, valid, complete, and served with offline docs."""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from openapi_spec_validator import validate

from service.api.docs.routes import openapi_text
from tests.api.conftest import build_app

CHECKED_IN = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"
# Routes outside the API contract: Prometheus metrics and the files of the docs and watch pages.
UNDOCUMENTED = {"/metrics", "/docs/start.js", "/docs/assets/<path:filename>",
                "/docs/<any(rules, api, records, fairness, ratings):name>.md",
                "/watch/assets/<any('watch.css', 'watch.js'):filename>"}


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


PER_REQUEST_HEADERS = {"If-Match", "If-None-Match", "Idempotency-Key", "Last-Event-ID"}


def test_every_field_and_parameter_has_a_description_and_an_example(spec):
    schemas = spec["components"]["schemas"]

    def referred(prop: dict) -> dict | None:
        ref = prop.get("$ref") or (prop.get("allOf") or prop.get("anyOf") or [{}])[0].get("$ref") \
            or prop.get("items", {}).get("$ref") \
            or (prop.get("items", {}).get("allOf") or [{}])[0].get("$ref")
        return None if ref is None else schemas[ref.rsplit("/", 1)[-1]]

    for name, schema in schemas.items():
        for field, prop in schema.get("properties", {}).items():
            assert prop.get("description"), f"{name}.{field} has no description"
            target = referred(prop)
            if target is not None and (target.get("type") == "object" or "oneOf" in target):
                # Swagger UI shows an object example on a property (or on the schema it refers
                # to) as "OrderedMap {...}": an object's example is made of its fields'.
                assert "example" not in prop and "example" not in target, f"{name}.{field}"
            else:
                # null is an example only of a field that may be null.
                assert prop.get("example") is not None or (prop.get("nullable") and "example" in prop), \
                    f"{name}.{field} has no example"
    for path, item in spec["paths"].items():
        for parameter in item.get("parameters", []):
            assert parameter.get("description") and "example" in parameter, f"{path} {parameter['name']}"
        for method, operation in item.items():
            if method == "parameters":
                continue
            assert operation.get("summary") and operation.get("operationId"), f"{method} {path}"
            for parameter in operation.get("parameters", []):
                name = parameter["name"]
                assert parameter.get("description"), f"{method} {path} {name}"
                has_example = "example" in parameter or "example" in parameter["schema"]
                # Swagger UI puts a parameter's example into its form, and a fixed version or
                # idempotency key sent from there would be refused: these document their format.
                assert has_example is (name not in PER_REQUEST_HEADERS), f"{method} {path} {name}"


def operations(spec: dict):
    """(path, method, operation) of every operation of ``spec``."""
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method != "parameters":
                yield path, method, operation


def resolved(spec: dict, node: dict) -> dict:
    ref = node.get("$ref")
    if ref is None:
        return node
    _, _, kind, name = ref.split("/")
    return spec["components"][kind][name]


def test_errors_are_documented_as_problems(spec):
    for path, method, operation in operations(spec):
        responses = operation["responses"]
        for status, response in responses.items():
            if status == "default" or status.startswith(("4", "5")):
                content = resolved(spec, response)["content"]
                assert list(content) == ["application/problem+json"], f"{method} {path} {status}"
                assert content["application/problem+json"]["schema"] == {"$ref": "#/components/schemas/Problem"}
        assert "default" in responses, f"{method} {path}"


def test_problems_are_shared_responses_with_one_example_per_code(spec):
    shared = spec["components"]["responses"]
    for path, method, operation in operations(spec):
        for status, response in operation["responses"].items():
            if (status == "default" or status.startswith(("4", "5"))) and operation["operationId"] not in (
                    "liveness", "readiness"):
                assert "$ref" in response, f"{method} {path} {status} is not a shared response"
                assert response["$ref"].split("/")[-1] in shared
        # The operation names the codes it may answer.
        assert "Problems (status and `code`)" in operation["description"] or set(operation["responses"]) <= {
            "200", "default"}, f"{method} {path}"
    for name, response in shared.items():
        examples = response["content"]["application/problem+json"]["examples"]
        for code, example in examples.items():
            assert resolved(spec, example)["value"]["code"] == code and f"`{code}`" in response["description"], (
                name, code)


def test_an_operation_shows_examples_of_the_codes_it_answers_only(spec):
    for path, method, operation in operations(spec):
        listed = re.search(r"Problems \(status and `code`\): (.*)\.", operation["description"])
        answered = {part.split(" ", 1)[0]: set(re.findall(r"`(\w+)`", part))
                    for part in (listed.group(1).split("; ") if listed else [])}
        answered["default"] = {"internal_error"}
        for status, response in operation["responses"].items():
            if status == "default" or status.startswith(("4", "5")):
                examples = resolved(spec, response)["content"]["application/problem+json"]["examples"]
                assert set(examples) == answered[status], f"{method} {path} {status}"


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


# --- what clients and /docs read -------------------------------------------------------------

PUBLIC_OPERATIONS = {"analyzeHand", "liveness", "readiness", "getOpenApi", "getDocs", "watchGame", "getRecord",
                     "getReplay", "getAnalysis"}
OPTIONAL_TOKEN_OPERATIONS = {"getGame", "listEvents", "streamGame"}
API_KEY_OPERATIONS = {"abort", "reissueToken", "listPlayerGames", "getPlayerRatings", "getRatingHistory",
                      "getLeaderboard", "createTicket", "getTicket", "cancelTicket", "createInvite", "getInvite",
                      "withdrawInvite", "acceptInvite", "streamKey"}


def test_who_may_call_what(spec):
    # openapi-python-client demands an AuthenticatedClient for an operation whose own `security`
    # is a non-empty list (even [{}]) and ignores the root list; Swagger UI applies the root list
    # to operations without their own. So: public operations say [], reads with an optional
    # token inherit the root's optional token, the others name their credential.
    assert spec["security"] == [{}, {"playerToken": []}]
    for path, method, operation in operations(spec):
        name = operation["operationId"]
        if name in OPTIONAL_TOKEN_OPERATIONS:
            assert "security" not in operation, name
        elif name in PUBLIC_OPERATIONS:
            assert operation["security"] == [], name
        elif name in API_KEY_OPERATIONS:
            assert operation["security"] == [{"apiKey": []}], name
        elif name == "createGame":  # the key, or nothing where anonymous creation is allowed
            assert operation["security"] == [{"apiKey": []}, {}], name
        else:
            assert operation["security"] == [{"playerToken": []}], name


def test_every_server_serves_the_document_checked_in_whatever_its_configuration(spec):
    keyed = json.loads(openapi_text(build_app(REDIS_URL="memory://", ALLOW_ANONYMOUS_CREATE="false",
                                              API_KEYS="k1,k2", RATE_LIMIT_PER_MINUTE="60")))
    assert keyed == spec


def test_the_document_names_its_publisher_server_and_rules(spec):
    from importlib.metadata import version

    info = spec["info"]
    assert info["version"] == version("ginrummy-service")
    assert info["license"]["name"] == "MIT" and info["contact"]["name"]
    assert spec["servers"] == [{"url": "/", "description": spec["servers"][0]["description"]}]
    # Relative to openapi/openapi.json in the repository: the rules file next to it.
    target = (CHECKED_IN.parent / spec["externalDocs"]["url"]).resolve()
    assert target == CHECKED_IN.parents[1] / "docs" / "rules.md" and target.is_file()


def test_the_docs_page_is_also_at_its_address_with_a_slash(app):
    client = app.test_client()
    slashed = client.get("/docs/")
    assert slashed.status_code == 200 and slashed.mimetype == "text/html"
    assert slashed.get_data() == client.get("/docs").get_data()


@pytest.mark.parametrize("page", ["/docs", "/docs/"])
def test_the_rules_link_works_from_the_served_docs_page(app, spec, page):
    # Swagger UI writes the link as given; the browser resolves it against the page's address.
    path = urlsplit(urljoin(f"http://service.example{page}", spec["externalDocs"]["url"])).path
    response = app.test_client().get(path)
    assert response.status_code == 200 and response.mimetype == "text/markdown"
    assert response.get_data(as_text=True) == (CHECKED_IN.parents[1] / "docs" / "rules.md").read_text(encoding="utf-8")


def test_the_served_guides_link_to_each_other(app):
    # docs/rules.md and docs/api.md link to each other as siblings; served under /docs, so are they.
    client = app.test_client()
    for name in ("rules", "api", "records", "fairness", "ratings"):
        text = client.get(f"/docs/{name}.md").get_data(as_text=True)
        assert text == (CHECKED_IN.parents[1] / "docs" / f"{name}.md").read_text(encoding="utf-8")
        siblings = set(re.findall(r"\]\(([a-z]+\.md)(?:#[^)]*)?\)", text))
        assert siblings
        for sibling in siblings:
            assert client.get(urljoin(f"/docs/{name}.md", sibling)).status_code == 200, (name, sibling)


def nodes(node: object):
    """Every object inside ``node``, depth first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from nodes(value)


def test_a_nullable_reference_is_that_object_or_null(spec):
    # Not allOf + nullable: OpenAPI 3.0.3 applies nullable only beside a type, so strict
    # validators would refuse the null.
    for node in nodes(spec):
        if "anyOf" in node:
            assert len(node["anyOf"]) == 2 and "$ref" in node["anyOf"][0], node
            assert node["anyOf"][1] == {"enum": [None], "nullable": True}, node
        if node.get("nullable") and "enum" not in node:
            assert "type" in node, node
    hand = spec["components"]["schemas"]["GameView"]["properties"]["hand"]
    assert hand["anyOf"][0] == {"$ref": "#/components/schemas/Hand"}


def test_strict_validation_takes_a_null_where_the_document_allows_one(spec):
    from openapi_schema_validator import OAS30Validator

    view = spec["components"]["schemas"]["GameView"]
    validator = OAS30Validator({**view["properties"]["last_hand"], "components": spec["components"]})
    assert validator.is_valid(None)
    assert not validator.is_valid({})  # not any object: the referenced one


def referenced(spec: dict, roots: list[dict]) -> set[str]:
    """The component schemas reachable from ``roots``."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        for node in nodes(todo.pop()):
            ref = node.get("$ref", "")
            if ref.startswith("#/components/schemas/") and ref.split("/")[-1] not in seen:
                seen.add(ref.split("/")[-1])
                todo.append(spec["components"]["schemas"][ref.split("/")[-1]])
    return seen


def test_responses_are_open_and_requests_strict(spec):
    answers, requests = [], []
    for _, _, operation in operations(spec):
        for response in operation["responses"].values():
            answers.append(resolved(spec, response))
        if "requestBody" in operation:
            requests.append(operation["requestBody"])
    for name in referenced(spec, answers):
        for node in nodes(spec["components"]["schemas"][name]):
            assert node.get("additionalProperties") is not False, name
    strict = referenced(spec, requests)
    assert {"DrawRequest", "KnockRequest", "LayoffItemRequest", "RulesRequest", "NewPlayerRequest"} <= strict
    for name in strict:
        schema = spec["components"]["schemas"][name]
        if schema.get("type") == "object" and "properties" in schema:
            assert schema.get("additionalProperties") is False, name


def test_events_are_one_schema_per_registered_type(spec):
    from service.api.games.event_schemas import schema_name
    from service.rules import EVENT_TYPES

    schemas = spec["components"]["schemas"]
    known = schemas["KnownEvent"]
    assert known["discriminator"]["propertyName"] == "type"
    mapping = known["discriminator"]["mapping"]
    assert set(mapping) == {kind.value for kind in EVENT_TYPES}
    assert sorted(option["$ref"] for option in known["oneOf"]) == sorted(mapping.values())
    # An event is a registered one, or one of a type added later, which any other type fits:
    # a string, never one value, outside the discriminated union.
    assert schemas["Event"]["oneOf"] == [{"$ref": "#/components/schemas/KnownEvent"},
                                         {"$ref": "#/components/schemas/OtherEvent"}]
    assert "discriminator" not in schemas["Event"]
    other_type = schemas["OtherEvent"]["properties"]["type"]
    assert other_type["type"] == "string" and not {"enum", "const"} & set(other_type)
    assert sorted(other_type["not"]["enum"]) == sorted(mapping)
    for kind, registered in EVENT_TYPES.items():
        schema = schemas[schema_name(kind)]
        properties = schema["properties"]
        assert properties["type"]["enum"] == [kind.value]
        assert {"seq", "type", "seat", "hand", "turn", "bot"} <= set(schema["required"])
        for field in registered.public:
            assert field.name in schema["required"] and "type" in properties[field.name] or \
                "allOf" in properties[field.name], (kind, field.name)
    assert schemas["DrawEvent"]["properties"]["source"]["allOf"] == [{"$ref": "#/components/schemas/DrawSource"}]
    assert schemas["DealEvent"]["properties"]["roles"]["items"] == {"$ref": "#/components/schemas/Role"}
    assert schemas["HandScoredEvent"]["properties"]["outcome"]["allOf"] == [{"$ref": "#/components/schemas/Outcome"}]
    assert schemas["DiscardEvent"]["properties"]["card"]["pattern"] == "^[A2-9TJQK][cdhs]$"
    page = schemas["EventPage"]["properties"]["events"]
    assert page["items"] == {"$ref": "#/components/schemas/Event"}


def test_every_response_declares_its_headers(spec):
    headers = spec["components"]["headers"]
    assert headers["X-Request-ID"]["required"] is True
    assert {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"} <= set(headers)
    for path, method, operation in operations(spec):
        limited = operation["operationId"] not in ("liveness", "readiness")
        for status, response in operation["responses"].items():
            declared = resolved(spec, response)["headers"]
            assert declared["X-Request-ID"] == {"$ref": "#/components/headers/X-Request-ID"}, (path, status)
            assert ("RateLimit-Remaining" in declared) is limited, (path, status)
            if status in ("429", "503"):
                assert "Retry-After" in declared, (path, status)


def test_patterns_read_alike_in_every_regex_engine(spec):
    # ASCII only, no escapes of code points or classes that engines disagree on (JavaScript
    # without the u flag, Rust's regex, Go's RE2), no look-around or back-references.
    for node in nodes(spec):
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            assert pattern.isascii() and re.compile(pattern), pattern
            assert not re.search(r"\\[uUxpPdDwWsS]|\(\?|\\[1-9]", pattern), pattern


def test_every_member_of_a_discriminated_union_has_its_value_mapped(spec):
    # A member left out of the mapping gets its schema's name as its value (OpenAPI's implicit
    # mapping): generated types then hold that name as the only value of the discriminator.
    for name, schema in spec["components"]["schemas"].items():
        if "discriminator" in schema:
            mapped = set(schema["discriminator"]["mapping"].values())
            assert {option["$ref"] for option in schema["oneOf"]} <= mapped, name


def test_layoff_and_its_dry_run_and_rematch_answers(spec):
    layoff = spec["paths"]["/v1/games/{game_id}/layoff"]["post"]
    # One body per operation, so a typed client gets what it asked for without narrowing.
    answer = layoff["responses"]["200"]["content"]["application/json"]
    assert answer["schema"] == {"$ref": "#/components/schemas/GameView"} and set(answer["examples"]) == {"view"}
    # The deprecated ?dry_run=true answers a DryRunLayoff: it is served, not documented.
    assert "dry_run" not in {parameter["name"] for parameter in layoff["parameters"]}
    dry_run = spec["paths"]["/v1/games/{game_id}/layoff/dry-run"]["post"]
    assert dry_run["operationId"] == "dryRunLayoff"
    answer = dry_run["responses"]["200"]["content"]["application/json"]
    assert answer["schema"] == {"$ref": "#/components/schemas/DryRunLayoff"} and set(answer["examples"]) == {"best"}
    assert dry_run["requestBody"]["content"]["application/json"]["schema"] == \
        layoff["requestBody"]["content"]["application/json"]["schema"]
    rematch = spec["paths"]["/v1/games/{game_id}/rematch"]["post"]["responses"]
    for status in ("201", "200"):
        assert rematch[status]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/CreatedGame"}


def test_every_example_fits_its_schema(spec):
    from openapi_schema_validator import OAS30Validator

    checked = 0

    def check(media: dict, where: str) -> None:
        nonlocal checked
        validator = OAS30Validator({**media["schema"], "components": spec["components"]})
        for name, example in media.get("examples", {}).items():
            errors = [error.message for error in validator.iter_errors(resolved(spec, example)["value"])]
            assert errors == [], f"{where} {name}"
            checked += 1

    for path, method, operation in operations(spec):
        for status, response in operation["responses"].items():
            for media in response.get("content", {}).values():
                check(media, f"{method} {path} {status}")
    for name, response in spec["components"]["responses"].items():
        check(response["content"]["application/problem+json"], name)
    for name, schema in spec["components"]["schemas"].items():
        validator = OAS30Validator({**schema, "components": spec["components"]})
        for field, prop in schema.get("properties", {}).items():
            original = spec["components"]["schemas"][name]["properties"][field]
            if "example" in original:
                OAS30Validator({**prop, "components": spec["components"]}).validate(original["example"])
        if "example" in schema:
            validator.validate(schema["example"])
    assert checked >= 40


def test_examples_come_from_real_games(spec):
    # The views of the examples are those of seeded matches: ids that the service would give,
    # and the events of a real deal (ten distinct cards dealt to the reader).
    from service import ids

    views = spec["paths"]["/v1/games/{game_id}"]["get"]["responses"]["200"]["content"]["application/json"]["examples"]
    assert {"public", "player", "defender", "finished"} <= set(views)
    assert all(ids.is_game_id(example["value"]["id"]) for example in views.values())
    events = spec["paths"]["/v1/games/{game_id}/events"]["get"]["responses"]["200"]["content"]["application/json"]
    early = events["examples"]["early"]["value"]["events"]
    dealt = [event for event in early if event["type"] == "dealt" and "cards" in event]
    assert len(dealt) == 1 and len(set(dealt[0]["cards"])) == 10


ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def test_every_time_is_documented_as_a_date_time(spec):
    # A generated client reads such a field as a time only when the document says so.
    times = [node for node in nodes(spec["components"]["schemas"])
             if node.get("type") == "string" and ISO_TIME.match(str(node.get("example", "")))]
    assert len(times) >= 3  # the view's deadline, a summary's creation, the timeout event's deadline
    assert all(node.get("format") == "date-time" for node in times), times


def test_a_view_always_holds_every_rule_option(spec):
    rules = spec["components"]["schemas"]["Rules"]
    assert sorted(rules["required"]) == sorted(rules["properties"])
