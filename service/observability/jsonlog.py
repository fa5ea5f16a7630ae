"""Log records as one JSON object per line on stderr, where container runtimes collect them."""
from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone

import flask

# Structured fields travel on a record under this attribute: logger.info(msg, extra={...}).
FIELDS_ATTRIBUTE = "json_fields"


def iso_utc(timestamp: float) -> str:
    """``timestamp`` (seconds since the epoch) as ISO 8601 UTC with milliseconds and a Z."""
    moment = datetime.fromtimestamp(timestamp, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class JsonFormatter(logging.Formatter):
    """Formats a record as a single-line JSON object.

    Keys: ``ts``, ``level``, ``logger``, ``msg``, ``request_id`` when logged while a request
    is handled, the record's structured fields, and ``exc`` with the traceback text when
    the record carries exception info.
    """

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": iso_utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        # g.get, not the middleware's current_request_id(): formatting must not choose an id.
        if flask.has_request_context() and flask.g.get("request_id"):
            entry["request_id"] = flask.g.request_id
        entry.update(getattr(record, FIELDS_ATTRIBUTE, {}))
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        # default=str: a field of an unexpected type still yields a line instead of an error.
        return json.dumps(entry, default=str)


class JsonStderrHandler(logging.StreamHandler):
    """Writes JSON lines to whatever ``sys.stderr`` is when a record is written.

    Like the standard library's last-resort handler, it does not keep the stream it saw at
    creation, so test runners that swap ``sys.stderr`` capture the lines.
    """

    def __init__(self) -> None:
        logging.Handler.__init__(self)
        self.setFormatter(JsonFormatter())

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr


def parse_level(level: str | int) -> int:
    """A logging level from a name such as ``"info"`` (any case) or a number.

    Raises ValueError for an unknown name."""
    if isinstance(level, int):
        return level
    try:
        return logging.getLevelNamesMapping()[level.strip().upper()]
    except KeyError:
        raise ValueError(f"LOG_LEVEL must be a logging level name, not {level!r}") from None


def configure_logging(level: str | int) -> None:
    """Send every logger's records, as JSON lines, to stderr at ``level`` and above.

    Idempotent: the handler is added to the root logger once per process however often an
    app is created; the level is set on every call (the latest app's configuration wins).
    Raises ValueError for an unknown level name.
    """
    # The lines carry no thread, and under gevent threading.current_thread() made a dummy
    # Thread object for every request greenlet that logs: about 10 of a record's 27 us.
    logging.logThreads = False
    root = logging.getLogger()
    root.setLevel(parse_level(level))
    if not any(isinstance(handler, JsonStderrHandler) for handler in root.handlers):
        root.addHandler(JsonStderrHandler())
