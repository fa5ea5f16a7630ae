"""Reading a receiver's answer: the status, and whether its connection can be reused."""
from __future__ import annotations

import http.client
import io

import pytest

from service.webhooks.answers import MAX_BODY_BYTES, MAX_HEADERS, Answer, read_answer


def answer_of(data: bytes) -> tuple[Answer, bytes]:
    """The answer read from ``data``, and what was left unread after it."""
    reader = io.BufferedReader(io.BytesIO(data))
    return read_answer(reader), reader.read()


@pytest.mark.parametrize(("data", "expected"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"ok\":true}", Answer(200, True)),
    (b"HTTP/1.1 204 No Content\r\n\r\n", Answer(204, True)),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
     b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n", Answer(202, True)),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", Answer(200, False)),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", Answer(200, False)),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", Answer(200, False)),
    (b"HTTP/1.1 200 OK\r\n\r\nuntil the connection ends", Answer(200, False)),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!", Answer(200, False)),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", Answer(200, False)),
    (b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy", Answer(503, True)),
    (b"HTTP/1.1 302 Found\r\nLocation: http://10.0.0.1/\r\nContent-Length: 0\r\n\r\n", Answer(302, True)),
])
def test_the_status_and_whether_the_connection_can_carry_another_request(data: bytes, expected: Answer) -> None:
    assert answer_of(data)[0] == expected


def test_a_reusable_answer_is_read_to_its_end_and_no_further() -> None:
    answer, rest = answer_of(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n")
    assert answer == Answer(200, True) and rest == b"HTTP/1.1 200 OK\r\n"


def test_a_body_longer_than_the_bound_is_not_read() -> None:
    body = b"x" * (MAX_BODY_BYTES + 1)
    answer, rest = answer_of(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    assert answer == Answer(200, False) and rest == body


@pytest.mark.parametrize(("data", "error"), [
    (b"", http.client.RemoteDisconnected),
    (b"SSH-2.0-OpenSSH_9.6\r\n", http.client.BadStatusLine),
    (b"HTTP/1.1 2000 OK\r\n\r\n", http.client.BadStatusLine),
    (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 9000 + b"\r\n\r\n", http.client.LineTooLong),
    (b"HTTP/1.1 200 OK\r\n" + b"X: 1\r\n" * (MAX_HEADERS + 1) + b"\r\n", http.client.HTTPException),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", http.client.HTTPException),
])
def test_what_is_not_an_http_answer_is_an_http_client_error(data: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        answer_of(data)
