"""The HTTP server of ``ginrummy serve``: Werkzeug's threaded development server, whose own
refusals (a request line or headers over its limits, a request it cannot parse) are
problem+json like every other answer, as gunicorn's are (service/middleware/protocol_problems.py)."""
from __future__ import annotations

import flask
from werkzeug.serving import WSGIRequestHandler, run_simple

from service.middleware.protocol_problems import protocol_problem


class ProblemRequestHandler(WSGIRequestHandler):
    """Werkzeug's request handler, answering what the server refuses as problem+json instead
    of the standard library's HTML page."""

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        self.log_error("code %d, message %s", code, message)
        phrase, headers, body = protocol_problem(code)
        # A request line that did not parse leaves the version at HTTP/0.9, which answers
        # without a status line or headers; the client should read the status and the type.
        if self.request_version == self.default_request_version:
            self.request_version = "HTTP/1.1"
        self.send_response(code, phrase)
        for name, value in headers:
            self.send_header(name, value)  # Connection: close among them
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def serve(app: flask.Flask, host: str, port: int) -> None:
    """Serve ``app`` on ``host``:``port``, a thread per connection, until interrupted."""
    run_simple(host, port, app, threaded=True, request_handler=ProblemRequestHandler)
