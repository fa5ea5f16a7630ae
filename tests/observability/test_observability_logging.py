"""JSON logs: one access line per request with the agreed fields, and nothing secret."""
from __future__ import annotations

import json
import logging
import re

import pytest

from observability_probe_app import PROBE_SECRET, SECRET_CARDS
from service import ids
from service.observability.jsonlog import JsonStderrHandler

ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
GAME_42, GAME_43 = ids.new_game_id(), ids.new_game_id()
# Well formed, but in no shard's slot (a fixed text: one derived from a random id at import
# could fail to exist, and each xdist worker would collect its own).
NO_SHARD_ID = "g_" + "A" * 22


def test_the_id_in_no_shard_is_well_formed_and_in_no_shard():
    assert ids.GAME_ID_PATTERN.fullmatch(NO_SHARD_ID) and ids.shard_of(NO_SHARD_ID) is None


def json_lines(err: str) -> list[dict]:
    """Every stderr line, parsed; fails the test if one is not a JSON object."""
    return [json.loads(line) for line in err.splitlines() if line.strip()]


def access_lines(err: str) -> list[dict]:
    return [line for line in json_lines(err) if line["logger"] == "ginrummy.access"]


def test_one_line_per_request_with_the_agreed_fields(make_app, capsys):
    client = make_app().test_client()
    capsys.readouterr()
    ok = client.get(f"/v1/games/{GAME_42}")
    failed = client.get(f"/v1/games/{GAME_43}/missing")

    lines = access_lines(capsys.readouterr().err)
    assert len(lines) == 2
    first, second = lines
    assert ISO_UTC.fullmatch(first["ts"])
    assert first["level"] == "INFO"
    assert first["request_id"] == ok.headers["X-Request-ID"]
    assert (first["method"], first["route"], first["game_id"], first["status"]) == (
        "GET", "/v1/games/<game_id>", GAME_42, 200)
    assert isinstance(first["duration_ms"], float) and 0 <= first["duration_ms"] < 5000
    assert first["remote_addr"] == "127.0.0.1"
    assert "code" not in first
    assert second["request_id"] == failed.headers["X-Request-ID"]
    assert (second["route"], second["status"], second["code"]) == (
        "/v1/games/<game_id>/missing", 404, "game_not_found")


def test_unmatched_paths_have_no_route_and_no_game(make_app, capsys):
    client = make_app().test_client()
    capsys.readouterr()
    client.get("/v1/nothing/here")
    [line] = access_lines(capsys.readouterr().err)
    assert (line["route"], line["game_id"], line["status"]) == (None, None, 404)


@pytest.mark.parametrize("game_id", [
    "g" * 500,
    "g_1",
    PROBE_SECRET.new_token(GAME_42),  # a token pasted where the id goes
    NO_SHARD_ID,
    "SECRET-API-KEY-xyz",
], ids=["long", "short", "token", "no-shard", "api-key"])
def test_a_game_id_that_no_game_can_have_is_never_logged(make_app, capsys, game_id):
    client = make_app().test_client()
    capsys.readouterr()
    client.get(f"/v1/games/{game_id}/missing")
    err = capsys.readouterr().err
    [line] = access_lines(err)
    assert line["game_id"] == "malformed"
    assert game_id not in err and game_id[:16] not in err


def test_secrets_and_cards_never_reach_the_log(make_app, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    client = make_app().test_client()
    secrets = ["SECRET-TOKEN-abc123", "SECRET-API-KEY-xyz", "SECRET-QUERY-token"]
    response = client.post(
        f"/v1/games/g_1/draw?token={secrets[2]}",
        json={"source": "discard", "cards": list(SECRET_CARDS)},
        headers={"Authorization": f"Bearer {secrets[0]}", "X-API-Key": secrets[1]},
    )
    assert response.status_code == 200
    assert all(card in response.get_data(as_text=True) for card in SECRET_CARDS)

    err = capsys.readouterr().err
    assert len(access_lines(err)) == 1
    captured = err + caplog.text
    for secret in [*secrets, *SECRET_CARDS, "Bearer", "Authorization", "discard"]:
        assert secret not in captured


def test_other_loggers_write_json_with_the_request_id(make_app, capsys):
    app = make_app()
    app.testing = False  # let Flask log the exception and answer 500
    client = app.test_client()
    capsys.readouterr()
    client.get("/boom", headers={"X-Request-ID": "r-boom"})

    lines = json_lines(capsys.readouterr().err)
    [error] = [line for line in lines if line["logger"] == app.logger.name]
    assert error["level"] == "ERROR"
    assert error["request_id"] == "r-boom"
    assert "RuntimeError: the view failed" in error["exc"]
    [access] = [line for line in lines if line["logger"] == "ginrummy.access"]
    assert (access["status"], access["request_id"]) == (500, "r-boom")


def test_logging_is_configured_once_however_many_apps_are_made(make_app):
    for _ in range(3):
        make_app()
    root = logging.getLogger()
    assert sum(isinstance(handler, JsonStderrHandler) for handler in root.handlers) == 1


def test_the_log_level_comes_from_the_config(make_app, capsys):
    client = make_app(LOG_LEVEL="warning").test_client()
    assert logging.getLogger().level == logging.WARNING
    capsys.readouterr()
    client.get("/v1/games/g_1")
    assert access_lines(capsys.readouterr().err) == []


def test_an_unknown_log_level_is_refused(make_app):
    with pytest.raises(ValueError, match="LOG_LEVEL"):
        make_app(LOG_LEVEL="chatty")


@pytest.mark.parametrize(("hops", "logged"), [(0, "10.0.0.1"), (1, "203.0.113.7")])
def test_the_logged_address_is_the_client_behind_trusted_proxies(make_app, capsys, hops, logged):
    client = make_app(TRUSTED_PROXY_HOPS=hops).test_client()
    capsys.readouterr()
    client.get(f"/v1/games/{GAME_42}", environ_base={"REMOTE_ADDR": "10.0.0.1"},
               headers={"X-Forwarded-For": "198.51.100.9, 203.0.113.7"})
    [line] = access_lines(capsys.readouterr().err)
    assert line["remote_addr"] == logged
