"""The parts of the OpenAPI document that no route or schema says: who publishes it, where it is
served, how requests authenticate, the headers every answer carries, and how apispec writes a
few constructs so that client generators and Swagger UI read them alike.

``finish(document, ...)`` is the last step of building the document: it declares the headers
that every response carries (``X-Request-ID``, and the rate-limit headers on the operations the
limiter counts).
"""
from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata

from apispec.ext.marshmallow import MarshmallowPlugin
from apispec.ext.marshmallow.openapi import OpenAPIConverter

PACKAGE = "ginrummy-service"
API_TITLE = "Gin Rummy"
# One version for the package and its API: the document says what this build serves.
API_VERSION = metadata.version(PACKAGE)
OPENAPI_VERSION = "3.0.3"
API_DESCRIPTION = """\
Host Gin Rummy matches: the classic two-player game and the three-player "in the box" game.

Create a match with `POST /v1/games`: the answer holds one secret **player token** per seat.
Act or read as that player with `Authorization: Bearer <token>`; without a token you get the
public (spectator) view. Every action answers with the actor's new view and an `ETag`
carrying the game's version; send it back in `If-Match` to act only on that version, and
add an `Idempotency-Key` to retry safely. Errors are `application/problem+json` with a
stable `code` to branch on. Cards are written rank then suit: `As`, `Td`, `Kh`.
The rules the engine enforces, both variants and every rule option, are served at
[/docs/rules.md](/docs/rules.md).

Responses may gain fields in later versions of this API: ignore the ones you do not know.
"""
CONTACT = {"name": "Gin Rummy service maintainers (see the repository's README)"}
LICENSE = {"name": "MIT", "url": "https://spdx.org/licenses/MIT.html"}
# Relative: the document describes whichever deployment serves it (and /docs tries requests
# against that same origin).
SERVERS = [{"url": "/", "description": "The service that serves this document"}]
# Relative, so that it holds both where the document is read: from openapi/openapi.json in any
# clone or repository browser it is the repository's docs/rules.md, and from the page /docs of a
# running service it is /docs/rules.md, where the service serves the same text.
EXTERNAL_DOCS = {
    "description": "The rules the engine enforces, both variants and every rule option",
    "url": "../docs/rules.md",
}

PLAYER_TOKEN = "playerToken"
API_KEY = "apiKey"
SECURITY_SCHEMES = {
    PLAYER_TOKEN: {
        "type": "http",
        "scheme": "bearer",
        "description": "A player token from the answer to `POST /v1/games`; it acts and reads as that seat.",
    },
    API_KEY: {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
        "description": "The integrator's service key: manages the matches it created; needed to create games "
                       "unless the server allows anonymous creation.",
    },
}
# The document's default, for the operations that declare no security of their own (reading a
# game and its events): a player token is optional. Declared at the root, not on those
# operations, on purpose: openapi-python-client makes an operation take an AuthenticatedClient
# whenever the operation's own `security` list is not empty (even `[{}]`) and ignores the root
# list, while Swagger UI applies the root list and so sends the token once one is authorized.
OPTIONAL_PLAYER_TOKEN = [{}, {PLAYER_TOKEN: []}]
# Operation-level forms (an empty list overrides the root: nothing to send).
NO_CREDENTIALS: list[dict] = []
PLAYER_ONLY = [{PLAYER_TOKEN: []}]
API_KEY_ONLY = [{API_KEY: []}]
# Creating a match: the API key, or nothing on a server that allows anonymous creation. The
# same on every server, so that the document checked in is the one every deployment serves;
# whether this one requires the key shows in its 401.
API_KEY_OR_ANONYMOUS = [{API_KEY: []}, {}]

REQUEST_ID = "X-Request-ID"
RATE_LIMIT_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
RETRY_AFTER = "Retry-After"
HEADERS = {
    REQUEST_ID: {
        "description": "The request's id: the client's own `X-Request-ID` when it sent an acceptable one (1-128 of "
                       "`A-Z a-z 0-9 . _ -`), else a new one. Quote it when reporting a problem: the service's "
                       "log lines carry it",
        "required": True,
        "schema": {"type": "string", "maxLength": 128},
        "example": "9f1c4be07a2d4c55b3e6d1f08a7c2e41",
    },
    "RateLimit-Limit": {
        "description": "When the server limits the rate: the requests this client may make per window",
        "schema": {"type": "integer", "minimum": 0},
        "example": 600,
    },
    "RateLimit-Remaining": {
        "description": "When the server limits the rate: the requests this client has left in the window",
        "schema": {"type": "integer", "minimum": 0},
        "example": 597,
    },
    "RateLimit-Reset": {
        "description": "When the server limits the rate: seconds until the window resets",
        "schema": {"type": "integer", "minimum": 0},
        "example": 42,
    },
    RETRY_AFTER: {
        "description": "Seconds to wait before retrying",
        "schema": {"type": "integer", "minimum": 0},
        "example": 1,
    },
}
# Operations the rate limiter never counts (the probes: see service/middleware/rate_limit.py).
UNLIMITED_OPERATIONS = frozenset({"liveness", "readiness"})


def documentation_only(decorator, func):
    """``func`` with the documentation that ``decorator`` (flask-smorest's ``doc`` or
    ``alt_response``) gives it, but not its wrapper, which only passes the call on: an action
    endpoint documents a dozen problem statuses, and as many nested calls on every request cost
    about 3 % of one."""
    func._apidoc = decorator(func)._apidoc
    return func


def header_ref(name: str) -> dict:
    return {"$ref": f"#/components/headers/{name}"}


def schema_ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


# The schema that admits null and nothing else, in OpenAPI 3.0 (which has no "null" type).
NULL_ONLY = {"enum": [None], "nullable": True}


class DocumentConverter(OpenAPIConverter):
    """apispec's converter with two changes.

    - A nullable reference is ``anyOf: [$ref, NULL_ONLY]``: that object, or null. apispec
      writes ``anyOf: [$ref, {type: object, nullable: true}]``, whose second branch admits any
      object (generators then make anonymous models and validators accept ``{}``); and
      ``allOf: [$ref]`` + ``nullable: true`` admits no null at all under OpenAPI 3.0.3, where
      ``nullable`` counts only beside a ``type``, so strict validators refuse every null.
    - A field whose metadata names a ``component`` is documented as a reference to that
      component schema (the shared enums and free-form objects, see ``vocabulary.py``) instead
      of an inline copy: clients get one type for, say, every draw source.
    """

    def init_attribute_functions(self):
        super().init_attribute_functions()
        # Before field2nullable, which then wraps the reference.
        self.attribute_functions.insert(self.attribute_functions.index(self.field2nullable), self.field2component)

    def field2component(self, field, ret) -> dict:
        name = field.metadata.get("component")
        if name is not None:
            for key in ("type", "enum", "format", "pattern", "items", "additionalProperties", "minLength",
                        "maxLength", "allOf", "$ref"):
                ret.pop(key, None)
            # A bare reference when nothing else describes the field (list items); else
            # wrapped, since OpenAPI 3.0 ignores a reference's siblings.
            if ret:
                ret["allOf"] = [schema_ref(name)]
            else:
                ret.update(schema_ref(name))
        return {}

    def field2nullable(self, field, ret) -> dict:
        if not field.allow_none:
            return {}
        if "$ref" in ret:
            return {"anyOf": [{"$ref": ret.pop("$ref")}, NULL_ONLY]}
        if "allOf" in ret:  # a component, wrapped by field2component
            return {"anyOf": [*ret.pop("allOf"), NULL_ONLY]}
        return {"nullable": True}


class DocumentPlugin(MarshmallowPlugin):
    Converter = DocumentConverter


def finish(document: dict, examples: Mapping[str, Mapping[str, Mapping[str, dict]]]) -> dict:
    """``document`` completed with what depends on no single route.

    - The headers of every response: ``X-Request-ID`` everywhere, the rate-limit headers on every
      response of the operations the limiter counts (the shared problem responses declare them
      once, in ``components/responses``).
    - ``examples[operationId][status]``: named examples of that response's body (JSON, or the
      media type an example names as its ``media``).
    - No examples of objects on the properties that refer to them (``examples_on_components``).
    """
    examples_on_components(document["components"]["schemas"])
    limited = {name: header_ref(name) for name in RATE_LIMIT_HEADERS}
    for response in document.get("components", {}).get("responses", {}).values():
        response.setdefault("headers", {}).update({REQUEST_ID: header_ref(REQUEST_ID), **limited})
    for item in document["paths"].values():
        for method, operation in item.items():
            if method == "parameters":
                continue
            name = operation.get("operationId")
            for status, response in operation["responses"].items():
                if "$ref" in response:
                    continue
                headers = response.setdefault("headers", {})
                headers[REQUEST_ID] = header_ref(REQUEST_ID)
                if name not in UNLIMITED_OPERATIONS:
                    headers.update(limited)
                for media, named in _by_media(examples.get(name, {}).get(status, {})).items():
                    response["content"][media]["examples"] = named
    return document


def _by_media(named: Mapping[str, dict]) -> dict[str, dict]:
    """Named examples grouped by media type: an example's ``media`` (default JSON), left out."""
    grouped: dict[str, dict] = {}
    for example_name, example in named.items():
        shown = {key: value for key, value in example.items() if key != "media"}
        grouped.setdefault(example.get("media", "application/json"), {})[example_name] = shown
    return grouped


def examples_on_components(schemas: dict[str, dict]) -> None:
    """Drop the examples of objects from the properties that refer to an object's schema.

    Swagger UI (4.x) shows a property's example as it holds it internally, so an object there
    reads ``OrderedMap { ... }`` (and a referenced schema's example is shown on every property
    that refers to it). The object's own properties carry examples, from which Swagger UI
    builds the example of the whole; responses carry real examples of their own.
    """
    def refers_to_object(schema: dict) -> bool:
        ref = schema.get("$ref") or (schema.get("allOf") or schema.get("anyOf") or [{}])[0].get("$ref")
        if ref is None:
            return schema.get("type") == "array" and refers_to_object(schema.get("items", {}))
        referred = schemas.get(ref.rsplit("/", 1)[-1], {})
        return referred.get("type") == "object" or "oneOf" in referred

    for schema in schemas.values():
        for prop in schema.get("properties", {}).values():
            if refers_to_object(prop):
                prop.pop("example", None)
