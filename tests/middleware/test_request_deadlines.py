"""Which request bodies the WSGI layer reads whole before the app runs, and which it leaves
(partly) unread, so that the connection closes after the answer (service/middleware/request_deadlines.py)."""
from __future__ import annotations

import io

import pytest

from service.middleware.request_deadlines import _read_body_before_deadline

CAP = 100


def environ(body: bytes, **headers: str) -> dict:
    return {"wsgi.input": io.BytesIO(body), **headers}


@pytest.mark.parametrize(("headers", "body", "whole", "read"), [
    ({}, b"", True, b""),  # no body
    ({"CONTENT_LENGTH": "100"}, b"x" * 100, True, b"x" * 100),  # at the cap
    ({"CONTENT_LENGTH": "101"}, b"x" * 101, False, None),  # over it: left to the app, unread
    ({"HTTP_TRANSFER_ENCODING": "chunked"}, b"x" * 100, True, b"x" * 100),
    ({"HTTP_TRANSFER_ENCODING": "chunked"}, b"x" * 101, False, b"x" * 101),  # one byte past: may go on
    ({"HTTP_TRANSFER_ENCODING": "chunked"}, b"x" * 500, False, b"x" * 101),
], ids=["none", "declared-at-cap", "declared-over-cap", "chunked-at-cap", "chunked-one-past", "chunked-far-past"])
def test_a_body_over_the_cap_is_not_read_whole(headers, body, whole, read) -> None:
    env = environ(body, **headers)
    sent = env["wsgi.input"]
    assert _read_body_before_deadline(env, 5.0, CAP) is whole
    if read is None:
        assert env["wsgi.input"] is sent and sent.tell() == 0
    else:
        assert env["wsgi.input"].read() == read
