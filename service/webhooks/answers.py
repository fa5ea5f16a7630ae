"""Reading a receiver's answer: its status, and whether its connection can carry another request.

Only what a delivery needs is read: the status line, the headers that say where the answer
ends (Content-Length, Transfer-Encoding) and whether the receiver keeps the connection
(Connection, the HTTP version), and a body of at most ``MAX_BODY_BYTES``. An answer whose
end is not known that cheaply (chunked, no length, a longer body) is not read on: its
connection is closed instead. http.client's reader parses every header with the email
package, which cost more CPU than all the rest of a delivery to a receiver that answers at
once. Errors are http.client's, so callers handle one family.
"""
from __future__ import annotations

import http.client
import io
from dataclasses import dataclass

MAX_LINE_BYTES = 8192
MAX_HEADERS = 100
MAX_BODY_BYTES = 4096
_NO_BODY = frozenset({204, 304})


@dataclass(frozen=True)
class Answer:
    """An answer's status; ``reusable`` when it was read to its end and the receiver keeps
    the connection open for another request."""

    status: int
    reusable: bool


def read_answer(reader: io.BufferedReader) -> Answer:
    """The final answer on ``reader`` (interim 1xx answers are skipped).

    Raises http.client.RemoteDisconnected when the connection ends before the first byte,
    another http.client.HTTPException when the answer is not HTTP/1.x, and OSError (e.g.
    TimeoutError) from reading."""
    version, status = _status_line(reader, first=True)
    headers = _headers(reader)
    while 100 <= status < 200:
        version, status = _status_line(reader, first=False)
        headers = _headers(reader)
    keeps = version == b"HTTP/1.1" and b"close" not in headers.get(b"connection", b"").lower()
    if status in _NO_BODY:
        return Answer(status, keeps)
    length = headers.get(b"content-length", b"")
    if b"transfer-encoding" in headers or not length.isdigit() or int(length) > MAX_BODY_BYTES:
        return Answer(status, False)
    body = reader.read(int(length))
    return Answer(status, keeps and len(body) == int(length))


def _status_line(reader: io.BufferedReader, first: bool) -> tuple[bytes, int]:
    line = reader.readline(MAX_LINE_BYTES + 1)
    if not line and first:
        raise http.client.RemoteDisconnected("the receiver closed the connection without an answer")
    if len(line) > MAX_LINE_BYTES:
        raise http.client.LineTooLong("status line")
    parts = line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or len(parts[1]) != 3 or not parts[1].isdigit():
        raise http.client.BadStatusLine(repr(line[:80]))
    return parts[0], int(parts[1])


def _headers(reader: io.BufferedReader) -> dict[bytes, bytes]:
    """Header names (lower case) and values; a repeated Content-Length, which makes the
    end of the answer ambiguous, is kept as an invalid one."""
    headers: dict[bytes, bytes] = {}
    for _ in range(MAX_HEADERS + 1):
        line = reader.readline(MAX_LINE_BYTES + 1)
        if len(line) > MAX_LINE_BYTES:
            raise http.client.LineTooLong("header line")
        if line in (b"\r\n", b"\n"):
            return headers
        if not line:
            raise http.client.IncompleteRead(b"", None)
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        headers[name] = b"repeated" if name == b"content-length" and name in headers else value.strip()
    raise http.client.HTTPException(f"more than {MAX_HEADERS} headers")
