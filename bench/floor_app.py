"""The service with a move's game logic taken out: the floor that its request layers set.

A move here passes through everything a real one does on its way in and out: gunicorn, the
middleware, Flask, flask-smorest's parsing and marshmallow's validation of the headers and
the body, the token check, the hooks, the metrics of the request, the JSON answer. It reads
the game from Redis as a move does (its state with the seats' presence, one round trip) and
writes it with the move's compare-and-set script and one event (one more). What it leaves
out is the game: no rule is applied, no view made (each game's first view is kept and
answered again), no record encoded (the text read is written back), no notices, no move
counted. Every move is accepted, so the simulated players keep playing the same turn.

``bench/load.py --floor`` runs it beside the baseline: its CPU per request over the
baseline's is what the request layers cost; the service's over it, the game logic.

    gunicorn -c python:service.gunicorn_conf bench.floor_app:app   (REDIS_URL, KEY_PREFIX)
"""
from __future__ import annotations

from service.api.context import EXTENSION
from service.app import create_app
from service.games.commit import Reply, parsed, seat_of
from service.store.base import Effects

app = create_app()
_games = app.extensions[EXTENSION].games
_views: dict[str, dict] = {}


def act(game_id: str, token: str, action, retry) -> Reply:
    """A move's reading and writing of the game, with the view of the game's first move."""
    store, settings = _games.ctx.store, _games.ctx.settings
    loaded = store.load(game_id, None, present=True)
    record = parsed(loaded)
    seat = seat_of(record, token)
    view = _views.get(game_id)
    if view is None:
        view = _views[game_id] = _games.shown(game_id, record, seat, loaded.present)
    count = record.match.event_count
    event = f'{{"q":{count},"t":"draw","s":{seat},"h":1,"p":{{"source":"stock"}}}}'
    store.save(game_id, loaded.version, loaded.state, loaded.version + 1,
               Effects(events=(event,), event_count=count, ttl=settings.game_ttl_seconds,
                       tombstone_ttl=settings.tombstone_ttl_seconds))
    return Reply(view, loaded.version + 1)


_games.act = act
