"""Hostile input over real HTTP (gunicorn): every request a careless or malicious client can
send gets a clear 4xx problem+json, and the game it aims at is left exactly as it was.

Requests go out through http.client so that the bytes on the wire are exactly the ones
written here (no client-side normalisation of paths, bodies or headers). Each one is sent
with the token of the player to move, in the middle of their turn (11 cards, after a draw),
so that anything slipping past validation would change the game.
"""
from __future__ import annotations

import http.client
import socket
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import pytest

from tests.e2e.players import ApiClient, Game, Move
from tests.e2e.stored_games import key_count, untouched_marker
from tests.gunicorn_server import GunicornServer
from tests.middleware.test_protocol_problems import APP_TITLES

PROBLEM = "application/problem+json"
BODY_CAP = 65536  # the service's default MAX_CONTENT_LENGTH
DECK = [rank + suit for suit in "cdhs" for rank in "A23456789TJQK"]


@dataclass(frozen=True)
class Turn:
    """The game under attack, in the middle of the mover's turn."""

    game: Game
    seat: int
    hand: list[str]

    @property
    def token(self) -> str:
        return self.game.tokens[self.seat]


Body = Callable[[Turn], bytes | Iterable[bytes] | None]


@dataclass(frozen=True)
class Hostile:
    """One hostile request: ``path`` may hold ``{game}``; ``headers`` replace the defaults
    (the mover's token and Content-Type: application/json)."""

    id: str
    method: str
    path: str
    body: Body
    status: int
    code: str
    headers: dict[str, str | None] | None = None


def as_json(value: object) -> Body:
    return lambda turn: json.dumps(value).encode()


def raw(text: str | bytes) -> Body:
    return lambda turn: text if isinstance(text, bytes) else text.encode()


def no_body(turn: Turn) -> None:
    return None


def chunked_oversized(turn: Turn) -> Iterator[bytes]:
    """A body over the cap sent in chunks, so no Content-Length announces its size."""
    yield b'{"source": "stock", "pad": "'
    for _ in range(BODY_CAP // 1024 + 2):
        yield b"x" * 1024
    yield b'"}'


def name(text: str) -> Body:
    """A create request whose first player is called ``text`` (raw JSON escapes allowed)."""
    return raw('{"variant": "classic", "players": [{"name": "%s"}, {"name": "Bob"}]}' % text)


def knock_with(melds: Callable[[Turn], list[list[str]]]) -> Body:
    return lambda turn: json.dumps({"discard": turn.hand[0], "melds": melds(turn)}).encode()


GAME = "/v1/games/{game}"
DRAW, DISCARD, KNOCK, LAYOFF = (f"{GAME}/{action}" for action in ("draw", "discard", "knock", "layoff"))
EVENTS = f"{GAME}/events"
INVALID, CARD = "invalid_request", "invalid_card"

CASES = [
    # Size: declared and undeclared (chunked) bodies over the cap.
    Hostile("body-over-cap", "POST", DRAW, as_json({"source": "stock", "pad": "x" * (BODY_CAP + 10)}), 413, "payload_too_large"),
    Hostile("chunked-body-over-cap", "POST", DRAW, chunked_oversized, 413, "payload_too_large"),
    # Nesting: deeper than the parser's recursion limit, and deep but parseable.
    Hostile("nested-arrays-30000", "POST", DRAW, raw("[" * 30000 + "]" * 30000), 400, INVALID),
    Hostile("nested-objects-6000", "POST", DRAW, raw('{"a":' * 6000 + "1" + "}" * 6000), 400, INVALID),
    Hostile("nested-500-unknown-field", "POST", DRAW, raw('{"source": "stock", "x": ' + "[" * 500 + "]" * 500 + "}"), 422, INVALID),
    # Not JSON, or JSON that Python would take but the standard does not.
    Hostile("invalid-utf8", "POST", DRAW, raw(b'{"source": "\xff\xfe"}'), 400, INVALID),
    Hostile("nan-constant", "POST", DRAW, raw('{"source": NaN}'), 400, INVALID),
    Hostile("5000-digit-integer", "POST", DISCARD, raw('{"card": 1' + "0" * 5000 + "}"), 400, INVALID),
    Hostile("form-encoded", "POST", DRAW, raw("source=stock"), 415, "unsupported_media_type",
            {"Content-Type": "application/x-www-form-urlencoded"}),
    # JSON between systems is UTF-8 (RFC 8259): no other charset, encoding or JSON media type.
    Hostile("charset-latin-1", "POST", DRAW, as_json({"source": "stock"}), 415, "unsupported_media_type",
            {"Content-Type": "application/json; charset=latin-1"}),
    Hostile("json-patch-media-type", "POST", DRAW, as_json({"source": "stock"}), 415, "unsupported_media_type",
            {"Content-Type": "application/json-patch+json"}),
    Hostile("utf-16-body", "POST", DRAW, raw('{"source": "stock"}'.encode("utf-16")), 400, INVALID),
    # Wrong types.
    Hostile("source-number", "POST", DRAW, as_json({"source": 5}), 422, INVALID),
    Hostile("source-null", "POST", DRAW, as_json({"source": None}), 422, INVALID),
    Hostile("body-array", "POST", DRAW, as_json([]), 422, INVALID),
    Hostile("body-string", "POST", DRAW, as_json("stock"), 422, INVALID),
    Hostile("body-null", "POST", DRAW, as_json(None), 422, INVALID),
    Hostile("unknown-field", "POST", DRAW, as_json({"source": "stock", "admin": True}), 422, INVALID),
    Hostile("card-list", "POST", DISCARD, as_json({"card": ["As"]}), 422, CARD),
    Hostile("card-number", "POST", DISCARD, as_json({"card": 10}), 422, CARD),
    Hostile("melds-string", "POST", KNOCK, lambda t: json.dumps({"discard": t.hand[0], "melds": "As"}).encode(), 422, INVALID),
    Hostile("layoff-meld-string", "POST", LAYOFF, as_json({"layoffs": [{"card": "As", "meld": "0"}]}), 422, INVALID),
    Hostile("layoff-meld-huge", "POST", LAYOFF, as_json({"layoffs": [{"card": "As", "meld": 10**30}]}), 422, INVALID),
    Hostile("layoff-meld-negative", "POST", LAYOFF, as_json({"layoffs": [{"card": "As", "meld": -1}]}), 422, INVALID),
    # Cards that do not exist, repeated cards, a whole deck.
    *(Hostile(f"card-{text or 'empty'}", "POST", DISCARD, as_json({"card": text}), 422, CARD)
      for text in ("10d", "as", "AS", "A♠", "Xx", "", "Ahh")),
    Hostile("meld-unknown-card", "POST", KNOCK, knock_with(lambda t: [["Xx", "2s", "3s"]]), 422, CARD),
    Hostile("meld-repeated-card", "POST", KNOCK, knock_with(lambda t: [[t.hand[1]] * 3]), 409, "invalid_melds"),
    Hostile("meld-whole-deck", "POST", KNOCK, knock_with(lambda t: [DECK]), 409, "invalid_melds"),
    Hostile("meld-53-cards", "POST", KNOCK, knock_with(lambda t: [DECK + ["As"]]), 422, INVALID),
    Hostile("53-layoffs", "POST", LAYOFF, as_json({"layoffs": [{"card": "As", "meld": 0}] * 53}), 422, INVALID),
    Hostile("analyze-whole-deck", "POST", "/v1/hands/analyze", as_json({"cards": DECK}), 422, INVALID),
    Hostile("analyze-repeated", "POST", "/v1/hands/analyze", as_json({"cards": ["As"] * 10}), 422, CARD),
    # Names (and advice) with control characters and text that is not printable Unicode.
    *(Hostile(f"name-{label}", "POST", "/v1/games", name(text), 422, INVALID)
      for label, text in (
          ("nul", "\\u0000Ann"), ("escape-sequence", "\\u001b[31mAnn"), ("newline", "Ann\\nBob"),
          ("delete", "Ann\\u007f"), ("c1-next-line", "Ann\\u0085"), ("line-separator", "Ann\\u2028"),
          ("bidi-override", "\\u202eevil"), ("lone-surrogate", "Ann\\ud800"), ("empty", ""),
          ("41-chars", "x" * 41),
      )),
    Hostile("name-number", "POST", "/v1/games", raw('{"variant": "classic", "players": [{"name": 5}, {"name": "Bob"}]}'), 422, INVALID),
    Hostile("advice-control-character", "POST", f"{GAME}/advice", as_json({"message": "take \u0000 it"}), 422, INVALID),
    # Query values out of range or not numbers.
    *(Hostile(f"events-{query}", "GET", f"{EVENTS}?{query}", no_body, 422, INVALID)
      for query in ("after=1" + "0" * 30, "after=-1", "after=abc", "wait=1e308", "wait=-1", "wait=31",
                    "wait=nan", "wait=inf", "after=1&after=2", "wait=0&wait=1")),
    # Ids that try to leave /v1/games or smuggle bytes in.
    Hostile("traversal-encoded", "GET", "/v1/games/..%2F..%2Fetc", no_body, 404, "not_found"),
    Hostile("traversal-encoded-passwd", "GET", "/v1/games/..%2F..%2Fetc/passwd", no_body, 404, "not_found"),
    Hostile("traversal-dots", "GET", "/v1/games/%2e%2e/%2e%2e/etc/passwd", no_body, 404, "not_found"),
    Hostile("traversal-after-real-id", "GET", "/v1/games/{game}%2F..%2F..%2Fetc", no_body, 404, "not_found"),
    Hostile("nul-in-id", "GET", "/v1/games/g_x%00", no_body, 404, "game_not_found"),
    Hostile("nul-after-real-id", "GET", "/v1/games/{game}%00", no_body, 404, "game_not_found"),
    Hostile("nul-in-id-action", "POST", "/v1/games/g_x%00/draw", as_json({"source": "stock"}), 404, "game_not_found"),
    Hostile("action-traversal", "POST", "/v1/games/{game}/..%2Fdraw", as_json({"source": "stock"}), 404, "not_found"),
    # An encoded slash is part of the id, not a separator; doubled slashes are not merged (nor
    # redirected to a URL built from the Host header).
    Hostile("encoded-slash-action", "POST", "/v1/games/{game}%2Fdiscard", lambda t: json.dumps({"card": t.hand[0]}).encode(),
            404, "game_not_found"),
    Hostile("encoded-slash-action-lower", "POST", "/v1/games/{game}%2fdiscard",
            lambda t: json.dumps({"card": t.hand[0]}).encode(), 404, "game_not_found"),
    Hostile("encoded-slash-events", "GET", "/v1/games/{game}%2Fevents", no_body, 404, "game_not_found"),
    Hostile("doubled-slashes-action", "POST", "//v1//games//{game}//discard",
            lambda t: json.dumps({"card": t.hand[0]}).encode(), 404, "not_found", {"Host": "evil.example"}),
    Hostile("doubled-slash-read", "GET", "/v1/games//{game}", no_body, 404, "not_found"),
    # Headers.
    Hostile("if-match-too-long", "POST", DRAW, as_json({"source": "stock"}), 422, INVALID, {"If-Match": '"' + "1" * 300 + '"'}),
    Hostile("if-match-not-a-version", "POST", DISCARD, lambda t: json.dumps({"card": t.hand[0]}).encode(), 412,
            "version_mismatch", {"If-Match": '"abc"'}),
    Hostile("idempotency-key-too-long", "POST", DISCARD, lambda t: json.dumps({"card": t.hand[0]}).encode(), 422,
            INVALID, {"Idempotency-Key": "k" * 201}),
    Hostile("token-5000-chars", "POST", DISCARD, lambda t: json.dumps({"card": t.hand[0]}).encode(), 401,
            "unauthorized", {"Authorization": "Bearer " + "x" * 5000}),
    Hostile("basic-auth", "POST", DISCARD, lambda t: json.dumps({"card": t.hand[0]}).encode(), 401,
            "unauthorized", {"Authorization": "Basic QW5uOnB3"}),
    Hostile("empty-bearer", "POST", DISCARD, lambda t: json.dumps({"card": t.hand[0]}).encode(), 401,
            "unauthorized", {"Authorization": "Bearer "}),
]


def send(server: GunicornServer, method: str, path: str, body: bytes | Iterable[bytes] | None,
         headers: dict[str, str]) -> tuple[int, str, bytes]:
    """(status, Content-Type, body) of one request sent exactly as given."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        chunked = body is not None and not isinstance(body, bytes)
        connection.request(method, path, body=body, headers=headers, encode_chunked=chunked)
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def turn(module_service: GunicornServer) -> Turn:
    """A seeded match where the mover has just drawn (11 cards in hand)."""
    client = ApiClient(module_service.url)
    game = client.create(seed=5)
    view = client.mover_view(game)
    while "discard" not in view["you"]["legal_actions"]:
        source = "stock" if "stock" in view["you"]["draw_sources"] else None
        move = Move("draw", {"source": source}) if source else Move("pass")
        assert client.act(game.game_id, game.tokens[view["you"]["seat"]], move).status_code == 200
        view = client.mover_view(game)
    client.close()
    return Turn(game, view["you"]["seat"], view["you"]["hand"])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_request_is_a_clear_4xx_and_changes_nothing(
    case: Hostile, turn: Turn, module_service: GunicornServer, module_truth, redis_url: str
) -> None:
    headers = {"Authorization": f"Bearer {turn.token}", "Content-Type": "application/json", **(case.headers or {})}
    prefix = module_service.environment["KEY_PREFIX"]
    before = untouched_marker(module_truth, turn.game.game_id)
    keys_before = key_count(redis_url, prefix)

    path = case.path.replace("{game}", turn.game.game_id)
    status, content_type, body = send(module_service, case.method, path, case.body(turn), headers)

    assert (status, content_type.split(";")[0]) == (case.status, PROBLEM), body[:500]
    problem = json.loads(body)
    assert {"type", "title", "status", "detail", "code"} <= problem.keys(), problem
    assert all(isinstance(problem[member], str) and problem[member] for member in ("type", "title", "detail"))
    assert (problem["status"], problem["code"]) == (case.status, case.code), problem
    assert b"Traceback" not in body and b'File "' not in body
    assert untouched_marker(module_truth, turn.game.game_id) == before
    assert key_count(redis_url, prefix) == keys_before, "a refused request stored something"


@pytest.mark.timeout(30)
def test_names_in_any_script_with_emoji_are_kept_exactly(module_service: GunicornServer) -> None:
    # The counterpart of the name cases above: refusing controls must not refuse people's names.
    names = ["Zoë", "李小龍", "Ørjan 👨‍👩‍👧"]  # the family emoji is joined by U+200D
    client = ApiClient(module_service.url)
    game = client.create(names=names[:2])
    assert [player["name"] for player in client.view(game.game_id).json()["players"]] == names[:2]
    response = client.create_response("classic", [names[2], "Bob"])
    client.close()
    assert response.status_code == 201, response.text
    assert response.json()["players"][0]["name"] == names[2]


@pytest.mark.parametrize(
    ("request_head", "status", "code"),
    [
        (b"GET /v1/games?after=" + b"1" * 6000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long"),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\nIdempotency-Key: a\x01b\r\n\r\n", 400, "invalid_request"),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"p" * 9000 + b"\r\n\r\n", 431, "headers_too_large"),
        (b"POST /v1/games HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: foo\r\n\r\n", 501, "not_implemented"),
        (b"POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n{}", 400, "invalid_request"),
    ],
    ids=["request-line-over-limit", "control-character-in-header", "header-over-limit", "unknown-transfer-coding",
         "negative-content-length"],
)
def test_requests_gunicorn_refuses_before_the_app_are_problems_too(
    module_service: GunicornServer, request_head: bytes, status: int, code: str
) -> None:
    """Gunicorn answers what it cannot parse itself; the answer is still problem+json, with the
    title the app gives the same code (the status's phrase for a code only servers answer)."""
    host, port = module_service.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.sendall(request_head)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    phrase = http.HTTPStatus(status).phrase
    assert head.split(b"\r\n")[0] == f"HTTP/1.1 {status} {phrase}".encode()
    assert f"content-type: {PROBLEM}".encode() in head.lower()
    # The security headers of every other answer, and a request id.
    assert b"x-content-type-options: nosniff" in head.lower() and b"frame-ancestors 'none'" in head.lower()
    assert re.search(rb"\r\nx-request-id: [0-9a-f]{32}\r\n", head.lower() + b"\r\n")
    problem = json.loads(body)
    assert (problem["status"], problem["code"], problem["title"]) == (status, code, APP_TITLES.get(code, phrase))
    assert set(problem) == {"type", "title", "status", "detail", "code", "params"}


@pytest.mark.parametrize("codings", ["gzip, chunked", "deflate, chunked", "identity, chunked"])
def test_a_transfer_coding_besides_chunked_is_501_and_the_move_is_not_played(module_service, codings) -> None:
    """Gunicorn takes these codings and removes only the chunking; the service must not read
    what is left (an empty body) as a pass, nor read on in the connection: it closes after the
    501, well before the keep-alive time (5 s) that the read below would otherwise wait out."""
    client = ApiClient(module_service.url)
    game = client.create()
    view = client.mover_view(game)
    assert "pass" in view["you"]["legal_actions"]
    seat, version = view["you"]["seat"], view["version"]
    host, port = module_service.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=3) as connection:
        connection.sendall(f"POST /v1/games/{game.game_id}/pass HTTP/1.1\r\nHost: x\r\n"
                           f"Authorization: Bearer {game.tokens[seat]}\r\nContent-Type: application/json\r\n"
                           f"Transfer-Encoding: {codings}\r\n\r\n0\r\n\r\n".encode())
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 501 ")
    assert json.loads(body)["code"] == "not_implemented"
    assert client.view(game.game_id, game.tokens[seat]).json()["version"] == version
    assert client.act(game.game_id, game.tokens[seat], Move("pass")).status_code == 200  # it was legal
    client.close()


@pytest.mark.timeout(30)
def test_a_body_refused_unread_closes_the_connection(module_service: GunicornServer) -> None:
    """413 for a declared length over the cap, before a byte of the body: the connection then
    closes at once. Kept alive, the server would wait for the whole body to discard it (up
    to its keep-alive timeout, 5 s) and could take what follows for a request. (Which bodies
    are left unread, chunked ones included: tests/middleware/test_request_deadlines.py.)"""
    host, port = module_service.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=2) as connection:
        connection.sendall(f"POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           f"Content-Length: {BODY_CAP * 16}\r\n\r\n".encode())
        answer = b""
        while chunk := connection.recv(65536):  # a timeout (2 s) here: the server kept it open
            answer += chunk
    head = answer.partition(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.1 413 ") and b"connection: close" in head
