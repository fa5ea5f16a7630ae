"""Reading request bodies: JSON only, and no body that can crash the parser.

webargs' own JSON loading lets a few hostile bodies through as server errors (an integer
of 5000 digits, arrays nested 100 000 deep) and silently ignores a body sent with another
media type; this parser turns all of them into client errors.
"""
from __future__ import annotations

import json

import flask
from flask_smorest import Blueprint
from webargs import core
from webargs.flaskparser import FlaskParser, abort, is_json_request

INVALID_JSON = {"json": ["Invalid JSON body."]}


def _refuse_constant(name: str) -> float:
    # NaN and Infinity are not JSON (RFC 8259), though Python's parser accepts them.
    raise ValueError(f"{name} is not valid JSON")


class JsonBodyParser(FlaskParser):
    """webargs' Flask parser with strict JSON bodies.

    No body is the same as ``{}``; a body in another media type is 415; text that is not
    JSON, or JSON that Python cannot represent safely, is 400.
    """

    def _raw_load_json(self, req: flask.Request):
        body = req.get_data(cache=True)
        if not body:
            return core.missing
        if not is_json_request(req):
            abort(415)
        try:
            return json.loads(body, parse_constant=_refuse_constant)
        except (ValueError, RecursionError):
            # ValueError covers bad syntax, bad UTF-8 and over-long integers.
            abort(400, messages=INVALID_JSON)


class ApiBlueprint(Blueprint):
    """The blueprint every resource uses: flask-smorest's, with the strict JSON parser."""

    ARGUMENTS_PARSER = JsonBodyParser()
