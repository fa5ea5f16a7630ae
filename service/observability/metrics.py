"""Prometheus metrics: HTTP traffic and game events, served at ``GET /metrics``.

Each app keeps its own ``CollectorRegistry`` in ``app.extensions`` (tests build many apps in
one process). Under gunicorn each worker counts separately; with the environment variable
``PROMETHEUS_MULTIPROC_DIR`` set (to an empty, writable directory, *before* the process
starts) prometheus_client keeps the values in files there and ``/metrics`` reports the sum
over all workers, whichever worker answers. The gunicorn master must then empty the
directory at start and call ``service.observability.multiproc.retire_process(worker.pid)``
from its ``child_exit`` hook (it folds a dead worker's files into archive files, so that the
directory does not grow with every recycled worker). In that mode several apps in one process
share their values, which only matters in tests.

With ``METRICS_TOKEN`` set (``app.config``), ``/metrics`` answers only requests that carry
``Authorization: Bearer <METRICS_TOKEN>`` (compared in constant time); any other request gets
a 401 problem ``unauthorized`` with ``WWW-Authenticate: Bearer realm="metrics"``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import flask
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, values
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector

from service.observability.bearer import (
    METRICS_CHALLENGE,
    REFUSAL_CODE,
    REFUSAL_DETAIL,
    REFUSAL_TITLE,
    bearer_matches,
)
from service.observability.multiproc import RetiringCollector
from service.problems import problem

METRICS_EXTENSION = "ginrummy.metrics"
MULTIPROC_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Requests take 1-50 ms (a Redis round trip or two around a pure computation): fine buckets
# there, coarse ones above to see a slow Redis and the long polls (up to 30 s).
LATENCY_BUCKETS = (
    0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075,
    0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0,
)

# Label values must come from small fixed sets, or a client could create unbounded series:
# unknown methods, and requests that matched no route (404, and 405 since Flask's routing
# only reports the method mismatch), are folded into one value each.
_KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "OTHER"
UNMATCHED_ENDPOINT = "unmatched"


@dataclass(frozen=True)
class Metrics:
    """One app's metrics; ``multiprocess`` says whether values are shared between workers."""

    registry: CollectorRegistry
    multiprocess: bool
    requests: Counter
    request_duration: Histogram
    moves: Counter
    version_conflicts: Counter
    store_errors: Counter
    games_created: Counter
    games_finished: Counter
    # Children of labelled metrics by metric and label values (see ``child``).
    children: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def create(cls, multiprocess: bool) -> Metrics:
        """Fresh metrics in a fresh registry."""
        registry = CollectorRegistry()
        return cls(
            registry=registry,
            multiprocess=multiprocess,
            requests=Counter(
                "http_requests_total", "HTTP requests answered.",
                ["endpoint", "method", "status"], registry=registry),
            request_duration=Histogram(
                "http_request_duration_seconds", "Time to build the response, in seconds.",
                ["endpoint", "method"], buckets=LATENCY_BUCKETS, registry=registry),
            moves=Counter(
                "game_moves_total", "Moves applied to games.", ["kind"], registry=registry),
            version_conflicts=Counter(
                "game_version_conflicts_total",
                "Saves that lost the compare-and-set on the game's version.", registry=registry),
            store_errors=Counter(
                "store_errors_total", "Game store operations that failed.", registry=registry),
            games_created=Counter(
                "games_created_total", "Matches created.", ["variant"], registry=registry),
            games_finished=Counter(
                "games_finished_total", "Matches played to the end.", ["variant"],
                registry=registry),
        )

    def observe_request(self, route: str | None, method: str, status: int, seconds: float) -> None:
        """Count and time one answered request; ``route`` is the matched URL rule or None."""
        endpoint, method = self.count_request(route, method, status)
        self.child(self.request_duration, endpoint, method).observe(seconds)

    def count_request(self, route: str | None, method: str, status: int) -> tuple[str, str]:
        """Count one request, and return its endpoint and method labels."""
        endpoint = route if route is not None else UNMATCHED_ENDPOINT
        method = method if method in _KNOWN_METHODS else OTHER_METHOD
        self.child(self.requests, endpoint, method, status).inc()
        return endpoint, method

    def child(self, metric: Counter | Histogram, *values: object):
        """``metric.labels(*values)``, kept: every request asks for the same few, and ``labels``
        turns its values to text and takes a lock each time. Label values come from small fixed
        sets (see above), so what is kept stays small."""
        key = (metric, values)
        found = self.children.get(key)
        if found is None:
            found = self.children[key] = metric.labels(*(str(value) for value in values))
        return found

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format 0.0.4 (all workers' in multiprocess mode)."""
        if not self.multiprocess:
            return generate_latest(self.registry)
        # A fresh collector per scrape, as prometheus_client documents: it reads the files
        # of every worker, the archive of the dead ones included.
        registry = CollectorRegistry()
        RetiringCollector(registry)
        return generate_latest(registry)


def _require_multiprocess_setup() -> None:
    """Raise RuntimeError/ValueError unless multiprocess mode will actually work.

    prometheus_client picks in-memory or file-backed values when it is first imported, so
    setting the variable later would silently report a single worker's figures."""
    if values.ValueClass is values.MutexValue:
        raise RuntimeError(
            f"{MULTIPROC_DIR_ENV} was set after prometheus_client was imported; "
            "set it in the environment before the process starts")
    MultiProcessCollector(None)  # raises ValueError unless the directory exists


def init_metrics(app: flask.Flask) -> Metrics:
    """Create the app's metrics and add the ``GET /metrics`` route (a plain Flask route, so
    it stays out of the OpenAPI document).

    Raises RuntimeError/ValueError when PROMETHEUS_MULTIPROC_DIR is set but unusable."""
    multiprocess = bool(os.environ.get(MULTIPROC_DIR_ENV))
    if multiprocess:
        _require_multiprocess_setup()
    metrics = Metrics.create(multiprocess)
    app.extensions[METRICS_EXTENSION] = metrics
    app.add_url_rule("/metrics", endpoint="metrics", view_func=_serve_metrics, methods=["GET"])
    return metrics


def _serve_metrics() -> flask.Response:
    token = flask.current_app.config.get("METRICS_TOKEN")
    if token and not bearer_matches(flask.request.headers.get("Authorization", ""), token):
        response = problem(401, REFUSAL_CODE, REFUSAL_TITLE, REFUSAL_DETAIL)
        response.headers["WWW-Authenticate"] = METRICS_CHALLENGE
        return response
    return flask.Response(current_metrics().exposition(), content_type=CONTENT_TYPE_PLAIN_0_0_4)


def current_metrics() -> Metrics:
    """The metrics of ``flask.current_app``.

    Raises RuntimeError outside an application context (Flask's own error) and when
    ``init_observability`` was not called for the app."""
    try:
        return flask.current_app.extensions[METRICS_EXTENSION]
    except KeyError:
        raise RuntimeError("init_observability(app) was not called for this app") from None


# What the use cases call. Each works inside a request or any other application context of
# an app set up with init_observability, and raises RuntimeError elsewhere: a count that is
# silently lost would make the dashboards lie. ``kind`` and ``variant`` must come from the
# service's fixed vocabularies (move names, variant names), never from raw client input.

def record_move(kind: str) -> None:
    """Count one applied move of ``kind`` (draw, pass, discard, knock, layoff, ...)."""
    (metrics := current_metrics()).child(metrics.moves, kind).inc()


def record_conflict() -> None:
    """Count one save that lost the compare-and-set on the game's version."""
    current_metrics().version_conflicts.inc()


def record_store_error() -> None:
    """Count one failed game store operation."""
    current_metrics().store_errors.inc()


def record_game_created(variant: str) -> None:
    """Count one new match of ``variant``."""
    current_metrics().games_created.labels(variant=variant).inc()


def record_game_finished(variant: str) -> None:
    """Count one match of ``variant`` played to the end."""
    current_metrics().games_finished.labels(variant=variant).inc()
