"""A tiny Flask app with game-shaped routes, to exercise observability and the middleware
without the real service (also started by gunicorn in the multi-process tests)."""
from __future__ import annotations

import os
import time

import flask

from service.middleware import init_middleware
from service.observability import init_observability, record_move
from service.problems import problem
from service.tokens import ServerSecret

# Cards and a secret that the probe routes handle; the tests assert that no log line shows them.
SECRET_CARDS = ("Qh", "Jd", "Kc")
# The server secret that the probe's tokens are issued with (the rate limiter checks them).
PROBE_SECRET = ServerSecret("probe-server-secret-" + "x" * 32)


def create_app(config: dict | None = None, limits_first: bool = False) -> flask.Flask:
    """The probe app; ``limits_first`` initialises the middleware before observability."""
    app = flask.Flask("observability_probe")
    app.config.update(config or {})
    if limits_first:
        init_middleware(app, secret=lambda: PROBE_SECRET)
        init_observability(app)
    else:
        init_observability(app)
        init_middleware(app, secret=lambda: PROBE_SECRET)

    @app.get("/healthz")
    def healthz():
        return {"status": "ok"}

    @app.get("/v1/games/<game_id>")
    def get_game(game_id):
        return {"id": game_id, "hand": list(SECRET_CARDS), "request_id": flask.g.request_id, "pid": os.getpid()}

    @app.get("/v1/games/<game_id>/missing")
    def missing_game(game_id):
        return problem(404, "game_not_found", "Game not found", "No game with this id.")

    @app.post("/v1/games/<game_id>/draw")
    def draw(game_id):
        body = flask.request.get_json()
        record_move("draw")
        return {"id": game_id, "received": body, "hand": list(SECRET_CARDS)}

    @app.post("/v1/games/<game_id>/ignore-body")
    def ignore_body(game_id):
        app.extensions.setdefault("views_run", []).append(game_id)
        return {"id": game_id}

    @app.get("/boom")
    def boom():
        raise RuntimeError("the view failed")

    @app.get("/slow")
    def slow():
        # Long enough that concurrent requests must be served by different sync workers.
        time.sleep(0.3)
        return {"pid": os.getpid()}

    return app
