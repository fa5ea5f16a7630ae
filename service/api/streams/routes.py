"""GET /v1/stream: everything an API key's webhooks announce, as Server-Sent Events, for
backends that cannot receive webhooks (docs/api.md, "The key's stream")."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import marshmallow as ma
import orjson
from flask import request
from flask.views import MethodView

from service.api import sse
from service.api.context import current
from service.api.credentials import players_owner
from service.api.fields import doc
from service.api.games.stream import open_streams
from service.api.openapi import API_KEY_ONLY
from service.api.parser import ApiBlueprint
from service.api.problems import documents_problems
from service.proxies import client_address
from service.store import shutdown
from service.streams.reader import stream_id

blp = ApiBlueprint("streams", __name__, url_prefix="/v1",
                   description="Your API key's stream: the webhooks' announcements as Server-Sent Events.")

F = ma.fields
EXAMPLE = """retry: 2480

id: 1764842400123-0
event: ticket_matched
data: {"type":"ticket_matched","timestamp":"2026-12-04T10:00:00Z","data":{"ticket_id":"t_...","game_id":"g_...","seat":0,...}}

id: 1764842400456-0
event: turn
data: {"type":"turn","timestamp":"2026-12-04T10:00:00Z","data":{"game_id":"g_...","seat":0,...}}

: keep-alive

"""


class KeyStreamQuerySchema(ma.Schema):
    after = F.String(validate=[ma.validate.Length(3, 30), ma.validate.Regexp(r"^[0-9]+-[0-9]+$")],
                     metadata=doc("Resume after this entry id; `Last-Event-ID` takes precedence. Without either the "
                                  "stream starts from now", "1764842400123-0"))


class KeyStreamHeadersSchema(ma.Schema):
    last_event_id = F.String(
        data_key=sse.LAST_EVENT_ID,
        metadata={"description": "The `id` of the last entry received (a browser's EventSource sends it when it "
                                 "reconnects): the stream resumes after it, without gap or repeat, for "
                                 "`KEY_STREAM_RETENTION_SECONDS` (25 h by default)"},
    )


@blp.route("/stream", endpoint="key_stream")
class KeyStream(MethodView):
    @blp.doc(operationId="streamKey", security=API_KEY_ONLY)
    @blp.arguments(KeyStreamHeadersSchema(), location="headers")
    @blp.arguments(KeyStreamQuerySchema(), location="query")
    @blp.response(200, {"type": "string", "description": "Server-Sent Events: each announcement with its type "
                                                         "and id, and heartbeat comments"},
                  content_type=sse.MEDIA_TYPE, example=EXAMPLE,
                  description="A stream of Server-Sent Events (`text/event-stream`) that stays open")
    @documents_problems(blp, {401: ["unauthorized"], 422: ["invalid_request"], 429: ["rate_limited", "too_many_streams"],
                              503: ["store_unavailable", "long_poll_capacity"]})
    def get(self, headers, query):
        """Follow your API key's stream

        Server-Sent Events: the same payloads as the webhooks (`turn`, `hand_over`,
        `match_over`, `timeout`, `ticket_matched`, `rating_changed`) for every match and ticket
        of your API key, each with `id:` (resume after it with `Last-Event-ID` or `?after=`,
        without gap or repeat, for at least 24 hours) and `event:` its type; a comment line at
        least every 15 s. For backends that cannot receive webhooks.
        """
        owner = players_owner(request)
        context = current()
        scope = context.games.ctx.scope_of(owner)
        held = ExitStack()
        try:
            held.enter_context(open_streams().taken(owner, client_address(request)))
            after = context.key_streams.start(scope, sse.resume_point(request, query.get("after"), stream_id))
        except BaseException:
            held.close()
            raise
        backlog = sse.Backlog(context.config.stream_heartbeat_seconds)
        frames = _frames(context.key_streams.follow(scope, after, context.config.stream_heartbeat_seconds,
                                                     shutdown.stopping), backlog)
        return sse.event_stream(request.environ, frames, held.close)


def _frames(entries, backlog: sse.Backlog) -> Iterator[bytes]:
    yield sse.retry_hint()
    sent = 0
    for entry in entries:
        data = sse.comment("keep-alive") if entry is None else sse.frame(orjson.loads(entry.body), entry.type,
                                                                        entry.id)
        backlog.check(sent)
        sent += len(data)
        yield data
