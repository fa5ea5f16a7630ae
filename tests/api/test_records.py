"""Records, replays and analysis through HTTP (docs/api.md, "Records, replays and analysis"), on
the embedded store and on Redis: whole matches of both variants replay to every view their
players were answered; the answers fit the OpenAPI document; what is not over, not there or
not in range is a problem with its code; an analysis is computed once and its computing is
rate limited; all of it expires with the match."""
from __future__ import annotations

import hashlib
import json
import threading
import time

import pytest
import redis

from service.games.record import Record
from service.records import analysis, replay, text
from service.records.verify import verify
from service.store.base import Effects
from service.store.keys import game_keys
from tests.api.conftest import build_app
from tests.api.support import API_KEY, SpecChecker, Table, play_one, store_of
from tests.api.test_errors import assert_problem

MATCHES = {
    "classic": [{"name": "Ann"}, {"name": "Robo", "bot": True, "level": "strong"}],
    "box": [{"name": "Ann"}, {"name": "Bob"}, {"name": "Robo", "bot": True}],
}


def play_out(table: Table) -> None:
    while table.view()["status"] == "active":
        assert play_one(table, explicit=table.view()["hand"]["number"] % 2 == 0).status_code == 200


def views_answered(table: Table) -> list[tuple[int | None, dict]]:
    """Every view the table's requests were answered with, and whose it was."""
    found = []
    for _, path, response in table.responses:
        body = response.get_json(silent=True)
        if response.status_code == 200 and isinstance(body, dict) and "version" in body and "players" in body:
            found.append(((body.get("you") or {}).get("seat"), body))
    return found


@pytest.mark.parametrize("variant", sorted(MATCHES))
def test_a_finished_match_replays_to_every_view_its_players_saw(any_app, variant):
    client = any_app.test_client()
    table = Table.open(any_app, client, variant, players=MATCHES[variant], client_seed="table 7")
    play_out(table)
    checker = SpecChecker(any_app)
    answer = table.get(None, "/record")
    checker.check("GET", f"/v1/games/{table.game_id}/record", answer)
    record = answer.get_json()
    assert verify(record) is None
    stored = Record.parse(store_of(any_app).load(table.game_id).state)
    by_version = {position.match.version: position.match for position in replay.positions(record)}
    seen = views_answered(table)
    assert len(seen) > 50
    for viewer, view in seen:
        # Presence is who was connected when the view was read, not part of the match.
        online = [player["online"] for player in view["players"]]
        assert stored.with_match(by_version[view["version"]]).view(table.game_id, viewer, online) == view
    # The view's result adds the service's rating changes (None: the match is unrated).
    final = table.view()["result"]
    assert final.pop("rating_changes") is None
    assert by_version[max(by_version)].result.as_dict() == record["result"] == final
    written = table.get(None, "/record", format="text")
    assert written.status_code == 200 and written.mimetype == "text/plain"
    checker.check("GET", f"/v1/games/{table.game_id}/record", written)
    assert text.parse(written.get_data(as_text=True)) == record
    for step in (0, 1, record["steps"] // 2, record["steps"]):
        shown = table.get(None, "/replay", step=step)
        checker.check("GET", f"/v1/games/{table.game_id}/replay", shown)
        assert shown.get_json()["step"] == step
    analysed = table.get(None, "/analysis")
    checker.check("GET", f"/v1/games/{table.game_id}/analysis", analysed)
    assert analysed.get_json()["seats"][0]["decisions"] > 0


def test_what_is_not_over_not_there_or_out_of_range_is_a_problem(any_app):
    client = any_app.test_client()
    table = Table.open(any_app, client, "classic", players=MATCHES["classic"])
    for suffix in ("/record", "/replay", "/analysis"):
        body = assert_problem(table.get(None, suffix), 409, "game_not_finished")
        assert body["params"] == {"status": "active"}
        assert_problem(client.get(f"/v1/games/g_AAAAAAAAAAAAAAAAAAAAAA{suffix}"), 404, "game_not_found")
        assert_problem(client.get(f"/v1/games/not-an-id{suffix}"), 404, "game_not_found")
        assert_problem(table.get(None, suffix, headers={"X-API-Key": "not-a-key"}), 401, "unauthorized")
    assert table.act(0, "resign").status_code == 200
    steps = table.get(None, "/record").get_json()["steps"]
    body = assert_problem(table.get(None, "/replay", step=steps + 1), 422, "step_out_of_range", "step")
    assert body["params"] == {"steps": steps}
    assert_problem(table.get(None, "/replay", step=-1), 422, "invalid_request", "step")
    assert_problem(table.get(None, "/replay", step="two"), 422, "invalid_request", "step")
    assert_problem(table.get(None, "/record", format="xml"), 422, "invalid_request", "format")


def test_the_client_seed_shows_in_every_view_and_a_rematch_keeps_it(any_app):
    client = any_app.test_client()
    for bad in ("", "x" * 65, "tab\there", 7, "\ud800"):
        response = client.post("/v1/games", json={"variant": "classic", "players": MATCHES["classic"],
                                                  "client_seed": bad})
        assert_problem(response, 422, "invalid_request", "client_seed")
    table = Table.open(any_app, client, "classic", players=[{"name": "Ann"}, {"name": "Bob"}],
                       client_seed="ünï ✓ " + "x" * 58)
    view = table.view(0)
    match = table.match()
    assert view["fairness"] == {"commitment": hashlib.sha256(match.server_seed.encode()).hexdigest(),
                                "client_seed": "ünï ✓ " + "x" * 58}
    assert len(match.server_seed) == 64 and int(match.server_seed, 16) >= 0
    assert table.act(0, "resign").status_code == 200
    again = table.act(0, "rematch").get_json()["game"]
    assert again["fairness"]["client_seed"] == view["fairness"]["client_seed"]
    assert again["fairness"]["commitment"] != view["fairness"]["commitment"]
    plain = Table.open(any_app, client, "classic", players=MATCHES["classic"])
    assert plain.view()["fairness"]["client_seed"] == ""


def test_a_match_dealt_before_fair_shuffles_still_plays_and_has_a_record_without_them(any_app):
    client = any_app.test_client()
    table = Table.open(any_app, client, "classic", players=MATCHES["classic"], seed=5)
    store = store_of(any_app)
    loaded = store.load(table.game_id)
    state = json.loads(loaded.state)
    state["m"] = {key: value for key, value in state["m"].items() if key not in ("ss", "cs")} | {"fmt": 2}
    stored = Record.parse(loaded.state)
    store.save(table.game_id, loaded.version, json.dumps(state), loaded.version,
               Effects(events=(), event_count=stored.match.event_count, ttl=3600, tombstone_ttl=3600))
    assert table.view()["fairness"] is None
    play_out(table)
    record = table.get(None, "/record").get_json()
    assert record["fairness"] is None and len(record["hands"]) >= 1
    assert str(verify(record)).startswith("fairness: the match was dealt before fair shuffles")
    assert list(replay.positions(record))[-1].match.result.as_dict() == record["result"]
    assert table.get(None, "/analysis").status_code == 200


def test_a_match_longer_than_the_events_kept_has_no_record(memory_store_app_with_few_events):
    app = memory_store_app_with_few_events
    for _ in range(10):  # deals are random: now and then a match ends within the 100 events kept
        table = Table.open(app, app.test_client(), "classic", players=MATCHES["classic"])
        play_out(table)
        if table.view()["last_seq"] > 100:
            break
    else:
        pytest.fail("none of ten matches ran past the 100 events kept")
    for suffix in ("/record", "/replay", "/analysis"):
        body = assert_problem(table.get(None, suffix), 409, "record_incomplete")
        assert body["params"]["first_kept"] > 1


@pytest.fixture
def memory_store_app_with_few_events():
    return build_app(REDIS_URL="memory://", MAX_EVENTS_PER_GAME="100")


def resigned(app) -> Table:
    """A match over at once: its person resigned before any move."""
    table = Table.open(app, app.test_client(), "classic", players=MATCHES["classic"])
    assert table.act(0, "resign").status_code == 200
    return table


def wait_for_a_fresh_minute() -> None:
    """The analysis allowance counts per clock minute: begin well inside one."""
    if time.time() % 60 > 55:
        time.sleep(61 - time.time() % 60)


def test_an_analysis_is_computed_once_and_computing_is_rate_limited_per_client(redis_url, key_prefix):
    # A prefix of its own: other tests of the session counted analyses for this address too.
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=f"{key_prefix}allowance:", ANALYSIS_PER_MINUTE="1")
    first, second = resigned(app), resigned(app)
    wait_for_a_fresh_minute()
    answer = first.get(None, "/analysis")
    assert answer.status_code == 200
    for _ in range(3):  # kept: reading it again is not counted
        assert first.get(None, "/analysis").get_json() == answer.get_json()
    refused = second.get(None, "/analysis")
    body = assert_problem(refused, 429, "analysis_quota_exceeded")
    assert body["params"]["limit"] == 1 and 1 <= int(refused.headers["Retry-After"]) <= 60
    assert second.get(None, "/analysis", headers={"X-API-Key": API_KEY}).status_code == 200  # another client
    store_of(app).close()


def test_concurrent_first_requests_compute_the_analysis_once(redis_url, key_prefix, monkeypatch):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, ANALYSIS_PER_MINUTE="0")
    table = Table.open(app, app.test_client(), "classic", players=MATCHES["classic"])
    play_out(table)
    computed = []
    real = analysis.analyse

    def counted(record):
        computed.append(record["id"])
        time.sleep(0.5)  # long enough that every request arrives while the first computes
        return real(record)

    monkeypatch.setattr(analysis, "analyse", counted)
    answers: list = []
    threads = [threading.Thread(target=lambda: answers.append(table.client.application.test_client().get(
        f"/v1/games/{table.game_id}/analysis"))) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert computed == [table.game_id]
    assert len({json.dumps(a.get_json(), sort_keys=True) for a in answers}) == 1 and answers[0].status_code == 200
    store_of(app).close()


def test_records_and_analyses_expire_with_the_match(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, GAME_TTL_SECONDS="3")
    table = resigned(app)
    assert table.get(None, "/analysis").status_code == 200
    keys = game_keys(key_prefix, table.game_id)
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:
        # In the match's own hash, the analysis and the claim to compute it live as long as the match.
        assert client.hexists(keys.state, "k:analysis") and client.hexists(keys.state, "c:analysis")
        assert set(client.scan_iter(match=f"{key_prefix}{{{table.game_id}}}*")) == {keys.state, keys.tombstone}
        time.sleep(client.pttl(keys.state) / 1000 + 0.5)
        for suffix in ("/record", "/replay", "/analysis"):
            assert_problem(table.get(None, suffix), 410, "game_expired")
        assert set(client.scan_iter(match=f"{key_prefix}{{{table.game_id}}}*")) == {keys.tombstone}
    store_of(app).close()
