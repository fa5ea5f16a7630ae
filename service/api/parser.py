"""Reading requests: JSON bodies in UTF-8 only, no body that can crash the parser, and each
query parameter once.

webargs' own JSON loading lets a few hostile bodies through as server errors (an integer
of 5000 digits, arrays nested 100 000 deep), takes any ``application/*+json`` type and any
charset, guesses UTF-16 and UTF-32 from the bytes, and silently ignores a body sent with
another media type; of a repeated query parameter it reads one and drops the others. This
parser turns all of them into client errors: JSON between systems is UTF-8 (RFC 8259, 8.1).
"""
from __future__ import annotations

import json

import flask
import marshmallow as ma
from flask_smorest import Blueprint
from webargs import core
from webargs.flaskparser import FlaskParser, abort

JSON_MEDIA_TYPE = "application/json"
INVALID_JSON = {"json": ["Invalid JSON body: send JSON text in UTF-8."]}


def _refuse_constant(name: str) -> float:
    # NaN and Infinity are not JSON (RFC 8259), though Python's parser accepts them.
    raise ValueError(f"{name} is not valid JSON")


def is_utf8_json(request: flask.Request) -> bool:
    """Whether the request's Content-Type is ``application/json`` with no parameter but an
    optional ``charset=utf-8`` (names and values in any case)."""
    if request.mimetype != JSON_MEDIA_TYPE:
        return False
    return all(name == "charset" and value.lower() == "utf-8" for name, value in request.mimetype_params.items())


# json.loads with an option builds a decoder per call; this one is built once.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


class JsonBodyParser(FlaskParser):
    """webargs' Flask parser with strict JSON bodies and query strings.

    No body is the same as ``{}``; a body in another media type or charset is 415; text that
    is not UTF-8 JSON, or JSON that Python cannot represent safely, is 400; a query parameter
    of the operation given more than once is 422.
    """

    def _raw_load_json(self, req: flask.Request):
        body = req.get_data(cache=True)
        if not body:
            return core.missing
        if not is_utf8_json(req):
            abort(415)
        try:
            # Decoded here, strictly: json.loads would take UTF-16 and UTF-32 bytes too.
            return _DECODER.decode(body.decode("utf-8"))
        except (ValueError, RecursionError):
            # ValueError covers bad syntax, bad UTF-8, a byte order mark and over-long integers.
            abort(400, messages=INVALID_JSON)

    def load_querystring(self, req: flask.Request, schema: ma.Schema):
        taken = {field.data_key or name for name, field in schema.fields.items()}
        repeated = [name for name, values in req.args.lists() if name in taken and len(values) > 1]
        if repeated:
            abort(422, messages={"query": {name: ["Give this parameter once."] for name in repeated}})
        return super().load_querystring(req, schema)


class ApiBlueprint(Blueprint):
    """The blueprint every resource uses: flask-smorest's, with the strict parser."""

    ARGUMENTS_PARSER = JsonBodyParser()
