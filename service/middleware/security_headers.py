"""Security headers on every response.

- ``X-Content-Type-Options: nosniff``: browsers take each body for its declared type only (a
  JSON answer holding a player's text is never run as a script or page).
- ``Referrer-Policy: no-referrer``: a page of this service never tells another site its URL
  (URLs carry game ids).
- ``Content-Security-Policy``: on the service's pages, /docs and /watch, and their assets,
  what they need and nothing more: their scripts, styles, images (some inline as ``data:``
  URIs in Swagger UI's stylesheet) and requests (the watch page's stream) to this origin only,
  and no framing (``frame-ancestors 'none'``). Every other answer is data, never a page: it
  may load nothing and be framed by nobody.
"""
from __future__ import annotations

from flask import Flask, Response, request

DOCS_PREFIX = "/docs"
WATCH_PREFIX = "/watch/"
DOCS_POLICY = "; ".join((
    "default-src 'self'",
    "img-src 'self' data:",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))
DATA_POLICY = "default-src 'none'; frame-ancestors 'none'"
HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
# What an answer written outside Flask carries (gunicorn's protocol errors, the body deadline's 408).
DATA_ANSWER_HEADERS = (*HEADERS.items(), ("Content-Security-Policy", DATA_POLICY))


def init_security_headers(app: Flask) -> None:
    """Add the security headers to every response of ``app``, errors included."""
    app.after_request(_secured)


_HEADER_ITEMS = tuple((name.lower(), name, value) for name, value in HEADERS.items())
_PAGE_PREFIXES = (DOCS_PREFIX + "/", WATCH_PREFIX)


def _secured(response: Response) -> Response:
    headers = response.headers
    # One pass over the names: a header werkzeug does not find costs it an exception.
    present = {name.lower() for name, _ in headers}
    for lowered, name, value in _HEADER_ITEMS:
        if lowered not in present:
            headers.add(name, value)
    path = request.path
    is_page = path == DOCS_PREFIX or path.startswith(_PAGE_PREFIXES)
    headers["Content-Security-Policy"] = DOCS_POLICY if is_page else DATA_POLICY
    return response
