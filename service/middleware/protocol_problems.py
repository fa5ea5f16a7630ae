"""What an HTTP server answers itself, before the app runs: problem+json, as every other answer.

Gunicorn and Werkzeug's development server answer a request they cannot parse (a request line
or headers over their limits, a malformed header) with an HTML page. Clients of this API branch
on problem+json codes, so those answers use the same format, with the security headers and a
request id of every other answer (service/gunicorn_conf.py and service/dev_server.py write
them). A code the app answers too has the app's title (one title per code: a client may show
it); the codes only a server answers have the status's phrase. The parser's message is never
echoed: it can quote the client's request line or headers (tokens among them).
"""
from __future__ import annotations

import http

from service.middleware.request_ids import REQUEST_ID_HEADER, new_request_id
from service.middleware.security_headers import DATA_ANSWER_HEADERS
from service.problems import PROBLEM_MIMETYPE, problem_body
from service.rules.errors import title_of

PROTOCOL_PROBLEMS = {
    400: ("invalid_request", "the request is not valid HTTP (request line or headers)"),
    403: ("forbidden", "the request was refused by the HTTP server"),
    414: ("uri_too_long", "the request line is longer than the server accepts"),
    417: ("expectation_failed", "the server cannot meet the Expect header"),
    431: ("headers_too_large", "the request headers are larger than the server accepts"),
    501: ("not_implemented", "the request uses an HTTP feature the server does not support"),
    505: ("http_version_not_supported", "the server speaks HTTP/1.0 and HTTP/1.1"),
}
UNFORESEEN = ("internal_error", "the server could not answer")


def protocol_problem(status: int) -> tuple[str, list[tuple[str, str]], bytes]:
    """The status phrase, headers and body of the answer with ``status`` to a request the HTTP
    server refused; the connection is closed after it."""
    code, detail = PROTOCOL_PROBLEMS.get(status, UNFORESEEN)
    phrase = http.HTTPStatus(status).phrase
    body = problem_body(status, code, title_of(code) or phrase, detail).encode()
    headers = [("Connection", "close"), ("Content-Type", PROBLEM_MIMETYPE), ("Content-Length", str(len(body))),
               (REQUEST_ID_HEADER, new_request_id()), *DATA_ANSWER_HEADERS]
    return phrase, headers, body
