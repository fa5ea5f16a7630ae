"""Each operation of the OpenAPI document lists exactly the problems its inputs can cause.

The codes that a request's own inputs decide (a body, a card, a header, a query parameter, a
credential, a game id) are derived here from what the document says each operation takes, and
must be listed if and only if the operation takes that input; then the ones a client is most
likely to branch on, `invalid_card` and `invalid_request`, are provoked through HTTP on every
operation that lists them. (The codes of the rules and of the store are each provoked in
tests/api/test_errors.py and tests/api/test_store_outage.py.)
"""
from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from service.api.docs.routes import openapi_text
from service.api.fields import CARD_PATTERN
from tests.api.conftest import build_app
from tests.api.support import API_KEY

UNLIMITED = {"/healthz", "/readyz"}  # the probes are never rate limited
Operation = tuple[str, str, dict]  # path, method, operation


@pytest.fixture(scope="module")
def document() -> dict:
    return json.loads(openapi_text(build_app(REDIS_URL="memory://")))


def operations(document: dict) -> Iterator[Operation]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method != "parameters":
                yield path, method, {**operation, "parameters": [*item.get("parameters", []),
                                                                *operation.get("parameters", [])]}


def node_path(reference: str) -> list[str]:
    return reference.removeprefix("#/").split("/")


def dereferenced(document: dict, node: dict) -> dict:
    """``node`` with its ``$ref`` (and the referenced node's) followed."""
    while "$ref" in node:
        target = document
        for part in node_path(node["$ref"]):
            target = target[part]
        node = target
    return node


def documented(document: dict, operation: dict) -> set[tuple[int, str]]:
    """The (status, code) pairs an operation lists: each problem response's examples, by code."""
    listed = set()
    for status, response in operation["responses"].items():
        if not status.isdigit():
            continue  # "default": any other status, unspecified
        content = dereferenced(document, response).get("content", {}).get("application/problem+json")
        if content is not None:
            listed |= {(int(status), code) for code in content.get("examples", {})}
    return listed


CONSTRAINTS = {"enum", "maxLength", "minLength", "pattern", "minimum", "maximum"}


def body_schema(document: dict, operation: dict) -> dict | None:
    body = operation.get("requestBody")
    if body is None:
        return None
    return dereferenced(document, body["content"]["application/json"]["schema"])


def holds_card(document: dict, schema: dict, seen: frozenset[str] = frozenset()) -> bool:
    """Whether a value of ``schema`` may hold a card (a string of the card pattern), anywhere."""
    if "$ref" in schema:
        if schema["$ref"] in seen:
            return False
        return holds_card(document, dereferenced(document, schema), seen | {schema["$ref"]})
    if schema.get("pattern") == CARD_PATTERN:
        return True
    inner = [*schema.get("properties", {}).values(), *schema.get("oneOf", []), *schema.get("anyOf", []),
             *schema.get("allOf", []), *([schema["items"]] if "items" in schema else [])]
    return any(holds_card(document, part, seen) for part in inner)


def top_level_fields(document: dict, schema: dict) -> set[str]:
    """The names of a body's own fields, in each of its alternatives (``oneOf``...)."""
    schema = dereferenced(document, schema)
    alternatives = [*schema.get("oneOf", []), *schema.get("anyOf", []), *schema.get("allOf", [])]
    return set(schema.get("properties", {})).union(*(top_level_fields(document, part) for part in alternatives))


def parameters(operation: dict, where: str) -> list[dict]:
    return [parameter for parameter in operation["parameters"] if parameter["in"] == where]


def derived(document: dict, path: str, operation: dict) -> dict[tuple[int, str], bool]:
    """For each problem a request's inputs decide: whether this operation can answer it."""
    body = body_schema(document, operation)
    fields = top_level_fields(document, body or {})
    headers = {parameter["name"] for parameter in parameters(operation, "header")}
    # A path value is checked only where its schema constrains it (an enum, a length): an id
    # that is no id of this service is simply not found.
    validated_path = [p for p in parameters(operation, "path") if p["name"] != "game_id" and CONSTRAINTS & set(p["schema"])]
    takes_game = any(p["name"] == "game_id" for p in parameters(operation, "path"))
    return {
        (400, "invalid_request"): body is not None,  # not JSON
        (413, "payload_too_large"): body is not None,
        (415, "unsupported_media_type"): body is not None,
        (422, "invalid_request"): bool(body is not None or parameters(operation, "query") or headers or validated_path),
        (422, "invalid_card"): body is not None and holds_card(document, body),
        (422, "invalid_rules"): "rules" in fields,
        (422, "callback_not_allowed"): "callback_url" in fields,
        (422, "idempotency_key_reused"): "Idempotency-Key" in headers,
        (412, "version_mismatch"): "If-Match" in headers,
        # Every /v1 operation refuses an unknown API key or token (a game's reads take a token).
        (401, "unauthorized"): path.startswith("/v1/"),
        (404, "game_not_found"): takes_game,
        (410, "game_expired"): takes_game,
        (429, "rate_limited"): path not in UNLIMITED,
    }


def test_each_operation_lists_a_problem_of_its_inputs_exactly_when_it_takes_that_input(document):
    wrong = []
    for path, method, operation in operations(document):
        listed = documented(document, operation)
        for problem, can_answer in derived(document, path, operation).items():
            if (problem in listed) != can_answer:
                wrong.append(f"{operation['operationId']}: {'misses' if can_answer else 'lists'} {problem}")
    assert wrong == []


# --- provoked through HTTP ------------------------------------------------------------------------

BAD_CARD_BODIES = {
    "discard": {"card": "Xx"},
    "knock": {"discard": "Xx"},
    "layoff": {"layoffs": [{"card": "Xx", "meld": 0}]},
    "dryRunLayoff": {"layoffs": [{"card": "Xx", "meld": 0}]},
    "advise": {"message": "take it", "action": {"type": "discard", "card": "Xx"}},
    "analyzeHand": {"cards": ["As", "2s", "3s", "4s", "5s", "6s", "7s", "8s", "9s", "Xx"]},
}


@pytest.fixture
def game(client) -> dict:
    created = client.post("/v1/games", json={"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}]})
    assert created.status_code == 201
    return created.get_json()


def send(client, document: dict, path: str, method: str, operation: dict, game: dict, *, body=None,
         query: str = "", headers: dict | None = None, path_values: dict | None = None):
    """Call ``operation`` on ``game`` with the credential it asks for, and ``body``, ``query``,
    ``headers``, path values as given."""
    values = {"game_id": game["game"]["id"], "seat": "0", "external_id": "someone", "variant": "classic",
              "ticket_id": "t_unknown", "code": "ABCD2345", **(path_values or {})}
    url = path.format(**values) + (f"?{query}" if query else "")
    credential = {"Authorization": f"Bearer {game['players'][0]['token']}", "X-API-Key": API_KEY}
    extra = {} if body is None else {"data": json.dumps(body), "content_type": "application/json"}
    return client.open(url, method=method.upper(), headers={**credential, **(headers or {})}, **extra)


def test_every_operation_that_lists_invalid_card_answers_it_to_a_card_that_is_none(document, client, game):
    listing = {operation["operationId"]: (path, method, operation) for path, method, operation in operations(document)
               if (422, "invalid_card") in documented(document, operation)}
    assert set(listing) == set(BAD_CARD_BODIES)
    for operation_id, (path, method, operation) in listing.items():
        answer = send(client, document, path, method, operation, game, body=BAD_CARD_BODIES[operation_id])
        assert (answer.status_code, answer.get_json()["code"]) == (422, "invalid_card"), operation_id


def invalid_input(document: dict, operation: dict) -> dict:
    """Arguments of ``send`` that break the operation's first input: an unknown body field, a
    header over its length, a query parameter given twice, a path value that is no value."""
    body = body_schema(document, operation)
    if body is not None:
        example = operation["requestBody"]["content"]["application/json"].get("example", {})
        return {"body": {**example, "unknown_field": 1}}
    headers = [p for p in parameters(operation, "header") if "maxLength" in p["schema"]]
    if headers:
        return {"headers": {headers[0]["name"]: "x" * (headers[0]["schema"]["maxLength"] + 1)}}
    query = parameters(operation, "query")
    if query:
        name = query[0]["name"]
        return {"query": f"{name}=1&{name}=1"}
    other = [p["name"] for p in parameters(operation, "path") if p["name"] != "game_id" and CONSTRAINTS & set(p["schema"])]
    return {"path_values": {other[0]: "x" * 200}}


def test_every_operation_that_lists_invalid_request_answers_it_to_an_input_that_is_wrong(document, client, game):
    listing = [(path, method, operation) for path, method, operation in operations(document)
               if (422, "invalid_request") in documented(document, operation)]
    assert listing
    for path, method, operation in listing:
        answer = send(client, document, path, method, operation, game, **invalid_input(document, operation))
        assert (answer.status_code, answer.get_json()["code"]) == (422, "invalid_request"), operation["operationId"]
