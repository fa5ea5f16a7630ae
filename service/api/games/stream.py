"""GET /v1/games/{id}/stream: a match live, as Server-Sent Events (registered on the games
blueprint). A thin view: the bounds, then ``open_stream``, then frames (``service.api.sse``)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import marshmallow as ma
from flask import Flask, Response, current_app, request
from flask.views import MethodView

from service.api import sse
from service.api.context import current
from service.api.credentials import api_key_owner, optional_token
from service.api.fields import doc
from service.api.games.routes import READ_PROBLEMS, blp
from service.api.games.schemas import AFTER_MAX, GAME_ID_PARAMETER
from service.api.problems import documents_problems
from service.games.stream import MatchOver, MatchStream, PresenceChange, Quiet, Shown, View, open_stream
from service.proxies import client_address

F = ma.fields
OPEN_STREAMS = "ginrummy.open_streams"

EXAMPLE = """retry: 3120

id: 41
event: view
data: {"id":"g_3q5Jt0-8bJpYc2mXkq1WZA","version":21,"variant":"classic","status":"active","players":[...],...}

id: 42
event: draw
data: {"seq":42,"type":"draw","seat":1,"hand":2,"turn":1,"bot":false,"source":"stock","card":null}

event: presence
data: {"seat":0,"online":false}

: keep-alive

id: 43
event: discard
data: {"seq":43,"type":"discard","seat":1,"hand":2,"turn":0,"bot":false,"card":"Kd"}

...

id: 97
event: match_finished
data: {"seq":97,"type":"match_finished","status":"finished","winner":0,...}

event: match_over
data: {"game_id":"g_3q5Jt0-8bJpYc2mXkq1WZA","status":"finished","result":{"winner":0,...}}

"""


class StreamQuerySchema(ma.Schema):
    after = F.Integer(
        load_default=None,
        validate=ma.validate.Range(0, AFTER_MAX),
        metadata=doc("Resume after this event (its `seq`); `Last-Event-ID` takes precedence. Without either the "
                     "stream starts from now, after the view", 0),
    )


class StreamHeadersSchema(ma.Schema):
    last_event_id = F.String(
        data_key=sse.LAST_EVENT_ID,
        metadata={"description": "The `id` of the last event received (a browser's EventSource sends it when it "
                                 "reconnects): the stream resumes after it, without gap or repeat"},
    )


def open_streams() -> sse.OpenStreams:
    """This app's bounds on open streams (one per app, so per process)."""
    found = current_app.extensions.get(OPEN_STREAMS)
    if found is None:
        config = current().config
        found = current_app.extensions.setdefault(
            OPEN_STREAMS, sse.OpenStreams(config.streams_per_api_key, config.streams_per_address))
    return found


@blp.route("/<game_id>/stream", endpoint="stream", parameters=[GAME_ID_PARAMETER])
class Stream(MethodView):
    @blp.doc(operationId="streamGame")
    @blp.arguments(StreamHeadersSchema(), location="headers")
    @blp.arguments(StreamQuerySchema(), location="query")
    @blp.response(
        200, {"type": "string", "description": "Server-Sent Events: `view`, then the match's events, `presence` "
                                               "changes and heartbeat comments; `match_over` last"},
        content_type=sse.MEDIA_TYPE, example=EXAMPLE,
        description="A stream of Server-Sent Events (`text/event-stream`), open until the match is over",
    )
    @blp.alt_response(204, description="The match is over and you have every event: nothing to stream (an "
                                       "EventSource stops reconnecting)")
    @documents_problems(blp, {**READ_PROBLEMS, 422: ["invalid_request"], 429: ["rate_limited", "too_many_streams"],
                              503: ["store_unavailable", "long_poll_capacity"]})
    def get(self, headers, query, game_id):
        """Follow a match live

        Server-Sent Events. First `view`: your view, as `GET /v1/games/{game_id}` gives it, with
        `id:` the event after which the stream goes on. Then every new event of
        `/events`, redacted for you, with `id:` its `seq` and `event:` its type; `presence`
        (no id: not stored) when a seat comes or goes; a comment line at least every 15 s.
        The match's end: its `match_finished` event, then `match_over` (no id: `game_id`,
        `status` and `result` as the view has them), then the stream ends. Reconnect with
        `Last-Event-ID` (or `?after=`)
        to resume without gap or repeat; once you have every event of a finished match the
        answer is 204.
        """
        limits = open_streams()
        held = ExitStack()
        try:
            held.enter_context(limits.taken(api_key_owner(request, current().config.api_keys),
                                            client_address(request)))
            stream = open_stream(current().games, game_id, optional_token(request),
                                 sse.resume_point(request, query["after"]))
            if stream is None:
                held.close()
                return Response(status=204)
            held.callback(stream.close)
        except BaseException:
            held.close()
            raise
        app = current_app._get_current_object()
        backlog = sse.Backlog(current().config.stream_heartbeat_seconds)
        return sse.event_stream(request.environ, _frames(app, stream, backlog, held), held.close)


def _frames(app: Flask, stream: MatchStream, backlog: sse.Backlog, held: ExitStack) -> Iterator[bytes]:
    """The stream's messages as SSE frames; lets go of ``held`` when it ends. The body is made
    after the view returned: in the app's context again (a deadline it settles is counted in
    the app's metrics)."""
    try:
        yield sse.retry_hint()
        with app.app_context():
            yield from _messages(stream, backlog)
    finally:
        held.close()


def _messages(stream: MatchStream, backlog: sse.Backlog) -> Iterator[bytes]:
    sent = 0
    for message in stream.messages():
        match message:
            case View():
                data = sse.frame(message.body, "view", message.resume_at)
            case Shown():
                data = sse.frame(message.body, message.type, message.seq)
            case PresenceChange():
                data = sse.frame({"seat": message.seat, "online": message.online}, "presence")
            case Quiet():
                data = sse.comment("keep-alive")
            case MatchOver():
                data = sse.frame(message.body, "match_over")
        backlog.check(sent)
        sent += len(data)
        yield data
