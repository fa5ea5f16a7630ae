"""The body cap, and the one transfer coding the service takes.

Configuration (``app.config``):

- ``MAX_CONTENT_LENGTH`` (bytes, default 65536): larger bodies get 413 ``payload_too_large``.
  A declared ``Content-Length`` above it is refused before the view runs, without reading
  the body; a chunked body is read (at most one byte past the cap) before the view runs.

A transfer coding other than chunked gets 501 ``not_implemented``, and a ``Content-Length``
that is not a number of bytes 400 ``invalid_request`` (Werkzeug would read ``-1`` or ``abc``
as an empty body).
"""
from __future__ import annotations

import io
import typing

import flask
from werkzeug.exceptions import BadRequest
from werkzeug.exceptions import NotImplemented as NotImplementedCoding
from werkzeug.exceptions import RequestEntityTooLarge

from service.middleware.request_deadlines import transfer_codings, unsupported_codings
from service.problems import problem

DEFAULT_MAX_CONTENT_LENGTH = 65536


def init_body_limit(app: flask.Flask) -> None:
    """Refuse, before any view, a body over the cap, a transfer coding other than chunked and
    a malformed Content-Length."""
    if app.config.get("MAX_CONTENT_LENGTH") is None:
        app.config["MAX_CONTENT_LENGTH"] = DEFAULT_MAX_CONTENT_LENGTH
    app.register_error_handler(RequestEntityTooLarge, _payload_too_large)
    app.before_request(_enforce_body_cap)


def _enforce_body_cap() -> None:
    """Before any view, raise NotImplemented (501 ``not_implemented``) for a transfer coding
    other than chunked, BadRequest for a Content-Length that is not digits, and
    RequestEntityTooLarge for a body over the cap.

    Gunicorn takes ``Transfer-Encoding: gzip, chunked``: it removes the chunking and hands on
    the compressed bytes, which no view would read as such (an empty body was even taken as
    a move's).

    A declared Content-Length over the cap is refused without reading the body (some views
    never read it and would accept it). A chunked body is read here, up to one byte past the
    cap, and handed on from memory: Werkzeug alone would stop reading at the cap and give the
    view a silently truncated body (a confusing 400 instead of 413).
    """
    request = flask.request
    environ = request.environ
    header = environ.get("HTTP_TRANSFER_ENCODING", "")
    if header and unsupported_codings(header):
        raise NotImplementedCoding(description="the only transfer coding this service takes is chunked")
    length = environ.get("CONTENT_LENGTH", "")
    if length and not (length.isascii() and length.isdigit()):
        raise BadRequest(description="Content-Length must be the body's size in bytes, in digits")
    cap = request.max_content_length
    if cap is None:
        return
    declared = request.content_length
    if declared is not None and declared > cap:
        raise RequestEntityTooLarge()
    # Only a server that marks the input as terminated can be read without a length
    # (Werkzeug's own rule); anywhere else the read could wait for bytes that never come.
    is_chunked = bool(header) and "chunked" in transfer_codings(header)
    if is_chunked and "wsgi.input_terminated" in environ:
        body = _read_up_to(environ["wsgi.input"], cap + 1)
        if len(body) > cap:
            raise RequestEntityTooLarge()
        environ["wsgi.input"] = io.BytesIO(body)


def _read_up_to(stream: typing.BinaryIO, limit: int) -> bytes:
    """Read from ``stream`` until it ends or ``limit`` bytes have been read."""
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = stream.read(min(remaining, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _payload_too_large(_error: RequestEntityTooLarge) -> flask.Response:
    cap = flask.request.max_content_length
    return problem(413, "payload_too_large", "Request body too large",
                   f"The request body may not exceed {cap} bytes.", {"max_bytes": cap})
