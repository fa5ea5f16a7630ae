"""Webhooks end to end on loopback: gunicorn + ``ginrummy worker`` + the real Redis + a receiver
verifying every delivery with the standardwebhooks library. Whole matches (a person against a
bot, two people) produce exactly the deliveries their own event logs call for, signed, without
tokens or hidden cards; a callback host that is not allowed is refused at creation."""
from __future__ import annotations

import random
import uuid
from collections.abc import Iterator

import pytest
from redis import Redis

from service import rules
from service.store import RedisStore
from service.webhooks.entries import ShardKeys
from tests.api.checks import LogReplay, person_move
from tests.e2e.players import ApiClient
from tests.e2e.webhook_stack import Stack, check_deliveries, expected_webhooks
from tests.gunicorn_server import TEST_API_KEY

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_url: str, key_prefix: str) -> Iterator[Stack]:
    running = Stack(tmp_path_factory.mktemp("webhooks"), redis_url, f"{key_prefix}wh-{uuid.uuid4().hex[:8]}:")
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def truth(stack: Stack, redis_url: str) -> Iterator[RedisStore]:
    store = RedisStore(redis_url, stack.prefix)
    yield store
    store.close()


@pytest.fixture
def api(stack: Stack) -> Iterator[ApiClient]:
    client = ApiClient(stack.service.url)
    yield client
    client.close()


def create(api: ApiClient, players: list[dict], **extra) -> dict:
    response = api.request("POST", "/v1/games", json={"variant": "classic", "players": players, **extra},
                           headers={"X-API-Key": TEST_API_KEY})
    assert response.status_code == 201, response.text
    return response.json()


def play_out(api: ApiClient, game_id: str, tokens: list[str | None], rng: random.Random) -> dict:
    """The people's moves until the match is over; returns the final public view."""
    for _ in range(3000):
        public = api.view(game_id).json()
        if public["status"] != "active":
            return public
        seat = public["hand"]["turn"]
        assert tokens[seat] is not None, "the service left a bot to move"
        view = api.view(game_id, tokens[seat]).json()
        action, body = person_move(view, rng)
        response = api.request("POST", f"/v1/games/{game_id}/{action}", tokens[seat],
                               **({} if body is None else {"json": body}))
        assert response.status_code == 200, response.text
    raise AssertionError("the match does not end")


def events_of(truth: RedisStore, game_id: str) -> list[rules.Event]:
    return [rules.decode_event(text) for text in truth.events(game_id, 0)]


@pytest.mark.parametrize("opponent", [
    {"name": "Robo", "bot": True, "level": "standard", "metadata": {"skin": "chrome"}},
    {"name": "Bob", "external_id": "user-bob"},
], ids=["against a bot", "two people"])
def test_a_whole_match_delivers_exactly_its_events(stack, truth, api, opponent):
    players = [{"name": "Ann", "external_id": "user-ann", "metadata": {"avatar": "fox"}}, opponent]
    created = create(api, players, callback_url=stack.callback_url, metadata={"room": "blue"},
                     rules={"target_score": 40})
    game_id = created["game"]["id"]
    tokens = [p["token"] for p in created["players"]]
    final = play_out(api, game_id, tokens, random.Random(5))
    assert final["status"] == "finished"
    events = events_of(truth, game_id)
    levels = [p["level"] for p in final["players"]]
    LogReplay(levels).check(events)
    people = {seat for seat, level in enumerate(levels) if level is None}
    expected = expected_webhooks(game_id, events, people)
    kinds = [e.type for e in expected]
    assert kinds.count("match_over") == 1 and kinds[-1] == "match_over"
    assert kinds.count("hand_over") == sum(1 for e in events if e.type.value == "hand_scored") >= 1
    assert "turn" in kinds
    received = stack.wait_for(game_id, {e.webhook_id for e in expected})
    check_deliveries(received, expected, final, tokens)
    assert expected[-1].version == final["version"]
    # Every delivery went to the match's callback, as the receiver saw it.
    assert {r.path for r in received} == {"/hooks/gin?tenant=7"}


def test_a_match_without_a_callback_sends_nothing(stack, api, redis_url):
    created = create(api, [{"name": "Ann"}, {"name": "Robo", "bot": True}])
    game_id = created["game"]["id"]
    assert api.request("POST", f"/v1/games/{game_id}/resign", created["players"][0]["token"]).status_code == 200
    # A match with a callback, created after it, is delivered: the worker is not behind.
    marker = create(api, [{"name": "Ann"}, {"name": "Bob"}], callback_url=stack.callback_url)["game"]["id"]
    stack.receiver.wait_for(lambda got: any(r.webhook_id.startswith(f"wh_{marker}_") for r in got), 20)
    assert stack.deliveries(game_id) == []
    keys = ShardKeys.for_game(stack.prefix, game_id)
    with Redis.from_url(redis_url, decode_responses=True) as client:
        assert not [f for _, f in client.xrange(keys.feed) if f["subject"] == game_id and f["url"]]
        assert not [f for _, f in client.xrange(keys.dead) if f.get("game") == game_id]


@pytest.mark.parametrize("url", [
    "http://127.0.0.2:{port}/hooks",  # another host
    "http://127.0.0.1:{other}/hooks",  # the allowed host on another port
    "https://hooks.example.com/gin",  # a host not listed at all
    "ftp://127.0.0.1:{port}/hooks",
    "not a url",
])
def test_a_callback_host_that_is_not_allowed_is_refused(stack, api, url):
    url = url.format(port=stack.receiver.port, other=stack.receiver.port + 1)
    response = api.request("POST", "/v1/games", headers={"X-API-Key": TEST_API_KEY}, json={
        "variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}], "callback_url": url})
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] == "callback_not_allowed" and isinstance(body["params"], dict)
    assert response.headers["Content-Type"].startswith("application/problem+json")


@pytest.mark.parametrize("ending", ["resign", "abort"])
def test_a_resigned_or_aborted_match_delivers_its_end(stack, truth, api, ending):
    created = create(api, [{"name": "Ann", "external_id": "user-ann"}, {"name": "Robo", "bot": True}],
                     callback_url=stack.callback_url)
    game_id, tokens = created["game"]["id"], [p["token"] for p in created["players"]]
    if ending == "resign":
        response = api.request("POST", f"/v1/games/{game_id}/resign", tokens[0])
    else:
        response = api.request("POST", f"/v1/games/{game_id}/abort", headers={"X-API-Key": TEST_API_KEY})
    assert response.status_code == 200, response.text
    final = api.view(game_id).json()
    events = events_of(truth, game_id)
    expected = expected_webhooks(game_id, events, {0})
    assert [e.type for e in expected] == ["turn", "match_over"]
    assert expected[-1].data["result"]["status"] == ("finished" if ending == "resign" else "aborted")
    assert expected[-1].data["result"]["forfeit"] == (0 if ending == "resign" else None)
    check_deliveries(stack.wait_for(game_id, {e.webhook_id for e in expected}), expected, final, tokens)
