"""Observability of the HTTP service: JSON logs and Prometheus metrics.

``init_observability(app)`` wires both into an app; the use cases count game events with the
``record_*`` functions re-exported here. Log lines carry the request id that the middleware
chose (``service.middleware.request_ids``).
"""
from __future__ import annotations

import time

import flask
from flask.logging import default_handler

from service.observability.access_log import log_request
from service.observability.jsonlog import configure_logging
from service.observability.metrics import (
    current_metrics,
    init_metrics,
    record_conflict,
    record_game_created,
    record_game_finished,
    record_move,
    record_store_error,
)
from service.requester import ClientGone

__all__ = [
    "init_observability",
    "record_conflict",
    "record_game_created",
    "record_game_finished",
    "record_move",
    "record_store_error",
]

DEFAULT_LOG_LEVEL = "INFO"
CLIENT_CLOSED_REQUEST = 499


def init_observability(app: flask.Flask) -> None:
    """Give ``app`` one JSON access-log line per request and Prometheus metrics.

    - Logs: every logger writes JSON lines to stderr at ``app.config["LOG_LEVEL"]``
      (default INFO); set up once per process, however many apps are created.
    - Metrics: ``GET /metrics``; see ``service.observability.metrics`` for multi-process
      gunicorn (PROMETHEUS_MULTIPROC_DIR).

    The timing covers building the response (all before/after-request hooks included),
    not sending a streamed body. Raises ValueError for an unknown LOG_LEVEL, and
    RuntimeError/ValueError when PROMETHEUS_MULTIPROC_DIR is set but unusable.
    """
    configure_logging(app.config.get("LOG_LEVEL", DEFAULT_LOG_LEVEL))
    # Flask gives app.logger its own plain-text handler; records should reach the JSON one.
    app.logger.removeHandler(default_handler)
    init_metrics(app)
    # First of all before-request hooks, so that the time exists even when a hook registered
    # earlier (a rate limit, a size check) answers the request itself.
    app.before_request_funcs.setdefault(None, []).insert(0, _start_request)
    app.after_request(_finish_request)
    app.teardown_request(_count_hang_up)


def _start_request() -> None:
    flask.g.request_started = time.perf_counter()


def _finish_request(response: flask.Response) -> flask.Response:
    duration = time.perf_counter() - flask.g.get("request_started", time.perf_counter())
    rule = flask.request.url_rule
    route = rule.rule if rule is not None else None
    current_metrics().observe_request(route, flask.request.method, response.status_code, duration)
    log_request(route, response, duration)
    return response


def _count_hang_up(error: BaseException | None) -> None:
    """Count a long-poll whose client hung up (it ends without an answer, so _finish_request
    never sees it) with status 499, "client closed request" as nginx calls it. Neither logged
    nor timed (no response was built): thousands can end at once when a proxy or a network
    drops its connections."""
    if isinstance(error, ClientGone):
        rule = flask.request.url_rule
        current_metrics().count_request(rule.rule if rule is not None else None, flask.request.method,
                                        CLIENT_CLOSED_REQUEST)
