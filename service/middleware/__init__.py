"""The middleware: what every request goes through beside the routes, wired by ``app.py``.

- ``request_ids``: every request's id (``X-Request-ID``), echoed on every answer;
- ``rate_limit``: at most RATE_LIMIT_PER_MINUTE requests per client and minute (429);
- ``body_limit``: the body cap (413) and the one transfer coding taken (501);
- ``security_headers``: nosniff, no referrer and a Content-Security-Policy on every answer;
- ``request_deadlines``: the body's and the answer's deadlines (408), as WSGI middleware
  around the app;
- ``protocol_problems``: what the HTTP servers answer themselves, before the app runs.

It knows nothing of the routes: what it answers itself is problem+json (``service.problems``).
"""
from __future__ import annotations

import flask

from service.middleware.body_limit import init_body_limit
from service.middleware.rate_limit import SecretSource, init_rate_limit
from service.middleware.request_deadlines import DEFAULT_BODY_SECONDS, DEFAULT_SEND_SECONDS, init_request_deadlines
from service.middleware.request_ids import init_request_ids
from service.middleware.security_headers import init_security_headers
from service.proxies import trust_proxies


def init_middleware(app: flask.Flask, secret: SecretSource) -> None:
    """Wire every middleware into ``app``, with the settings of its config (the service's
    Config as Flask keys): TRUSTED_PROXY_HOPS, RATE_LIMIT_PER_MINUTE, API_KEYS, REDIS_URL,
    KEY_PREFIX, MAX_CONTENT_LENGTH, REQUEST_BODY_TIMEOUT_SECONDS, RESPONSE_SEND_TIMEOUT_SECONDS.

    ``secret`` gives the server secret that the rate limit checks bearer tokens with. Nothing may
    wrap ``app.wsgi_app`` after it: the deadlines must see the request first."""
    # X-Forwarded-For decides request.remote_addr for everything after it (rate limit,
    # creation quota, access log).
    trust_proxies(app, int(app.config.get("TRUSTED_PROXY_HOPS") or 0))
    init_request_ids(app)
    # Before the body cap: a client over its limit is refused before its body is read.
    init_rate_limit(app, secret)
    init_body_limit(app)
    init_security_headers(app)
    init_request_deadlines(app, float(app.config.get("REQUEST_BODY_TIMEOUT_SECONDS") or DEFAULT_BODY_SECONDS),
                           float(app.config.get("RESPONSE_SEND_TIMEOUT_SECONDS") or DEFAULT_SEND_SECONDS))
