"""The ceiling of this stack: a minimal Flask app whose one endpoint does a move's Redis work.

``POST /games/<id>/move`` reads one game-sized JSON value (with its version), changes it,
and writes it back with a compare-and-set on the version in one Lua script that also appends
one event, like the service's save (service/store/redis.py): one read and one write round
trip, and nothing else (no rules, no views, no validation, no logging). bench/load.py runs
it under the service's own gunicorn settings and sets the service's CPU per request against its.

    gunicorn -c python:service.gunicorn_conf bench.baseline_app:app   (REDIS_URL, KEY_PREFIX)

It runs under the same worker model as the service (gevent workers, from those settings) and,
like the service's store, takes its Redis connections from a blocking pool of 32, of the
store's connection class (service/store/quick_check.py).

``POST /games`` stores a new game: the engine's encoding of a freshly dealt match, so the
value has the size of a real one.
"""
from __future__ import annotations

import json
import os
import secrets

import redis
from flask import Flask, jsonify

from service import rules
from service.store.quick_check import with_quick_check

TTL_SECONDS = 3600

# KEYS: state, events. ARGV: expected version, new version, state, ttl, event.
CAS_LUA = """
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 's', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('RPUSH', KEYS[2], ARGV[5])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
"""


def game_record() -> str:
    """A stored game as the service writes it: the match's encoding and two token hashes."""
    match, _ = rules.new_match("classic", ["Ann", "Bob"], rules.rules_for("classic", None))
    return json.dumps({"m": rules.encode(match), "t": [secrets.token_hex(32)] * 2}, separators=(",", ":"))


def create_app() -> Flask:
    app = Flask(__name__)
    pool = redis.BlockingConnectionPool.from_url(
        os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), decode_responses=True, max_connections=32, timeout=1.0)
    pool.connection_class = with_quick_check(pool.connection_class)  # as the store's
    client = redis.Redis(connection_pool=pool)
    prefix = os.environ.get("KEY_PREFIX", "baseline:")
    cas = client.register_script(CAS_LUA)

    def keys(game_id: str) -> list[str]:
        return [f"{prefix}{{{game_id}}}:s", f"{prefix}{{{game_id}}}:e"]

    @app.get("/healthz")
    def healthz():
        return jsonify(status="ok")

    @app.post("/games")
    def create():
        game_id = "g_" + secrets.token_urlsafe(16)
        client.hset(keys(game_id)[0], mapping={"v": 1, "s": game_record()})
        return jsonify(id=game_id), 201

    @app.post("/games/<game_id>/move")
    def move(game_id: str):
        state_key, events_key = keys(game_id)
        version, state = client.hmget(state_key, "v", "s")
        if version is None:
            return jsonify(code="game_not_found"), 404
        record = json.loads(state)
        record["m"]["version"] += 1  # the change a move makes, in miniature
        record["m"]["events"] += 1
        event = json.dumps({"q": record["m"]["events"], "t": "draw", "s": 0, "h": 1, "p": {"source": "stock"}})
        applied = cas(keys=[state_key, events_key],
                      args=[version, int(version) + 1, json.dumps(record, separators=(",", ":")), TTL_SECONDS, event])
        if not applied:
            return jsonify(code="conflict"), 409
        return jsonify(version=int(version) + 1)

    return app


app = create_app()
