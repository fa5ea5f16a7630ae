"""Turn deadlines through HTTP on the real Redis, with the service's clock moved (never slept):
the rule option, ``hand.deadline``, its timer (which the worker fires), the lazy settlement by any
request that loads the game, and a late move racing the timeout (exactly one applies)."""
from __future__ import annotations

import json
import random
from datetime import datetime
import threading
import time

import pytest
from redis import Redis

from service import rules
from service.api.context import EXTENSION
from service.store import store_from_url
from service.store.errors import LongPollCapacity, StoreError
from service.store.keys import game_keys
from service.store.timers import DEADLINE_TIMER, Timer
from tests.api.checks import ACTIONS, LogReplay, person_move, stored_events, stored_match
from tests.api.conftest import build_app
from tests.api.support import API_KEY, store_of
from tests.api.test_errors import assert_problem
from tests.api.test_retries import InterleavingStore, slip_in
from tests.e2e.stored_games import invariant_violations, load_game

TURN = 30
START = 1_900_000_000.0  # a fixed moment (2030), so deadlines are exact
CALLBACK_HOST = "http://127.0.0.1:9"


class Clock:
    """The service's clock in these tests: moved by hand; ``ahead`` gives chosen threads a later time."""

    def __init__(self, now: float = START):
        self.now = now
        self.ahead: dict[int, float] = {}

    def __call__(self) -> float:
        return self.ahead.get(threading.get_ident(), self.now)

    def move(self, seconds: float) -> float:
        self.now += seconds
        return self.now


def clocked(app) -> Clock:
    clock = Clock()
    app.extensions[EXTENSION].games.ctx.clock = clock
    return clock


@pytest.fixture
def app(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, WEBHOOK_ALLOWED_HOSTS=CALLBACK_HOST)
    yield app
    store_of(app).close()


@pytest.fixture
def clock(app) -> Clock:
    return clocked(app)


@pytest.fixture
def redis_client(redis_url):
    client = Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


def create(app, players=None, turn_seconds=TURN, **extra) -> tuple[str, list[str | None]]:
    players = players or [{"name": "Ann"}, {"name": "Bob"}]
    body = {"variant": "classic", "players": players, "rules": {"turn_seconds": turn_seconds}, "seed": 41, **extra}
    response = app.test_client().post("/v1/games", json=body)
    assert response.status_code == 201, response.get_json()
    created = response.get_json()
    return created["game"]["id"], [p["token"] for p in created["players"]]


def bearer(token: str | None) -> dict:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


def view(app, game_id: str, token: str | None = None) -> dict:
    response = app.test_client().get(f"/v1/games/{game_id}", headers=bearer(token))
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def due_score(redis_client: Redis, prefix: str, game_id: str) -> float | None:
    return redis_client.zscore(game_keys(prefix, game_id).timers, Timer(DEADLINE_TIMER, game_id).member)


def replayed(app, game_id: str, bots=(None, None)) -> LogReplay:
    return LogReplay(list(bots)).check(stored_events(store_of(app), game_id))


# --- the rule option -------------------------------------------------------------------------

@pytest.mark.parametrize("seconds", [10, 86400, None])
def test_turn_seconds_within_range_or_null_is_accepted(app, clock, seconds):
    game_id, _ = create(app, turn_seconds=seconds)
    shown = view(app, game_id)
    assert shown["rules"]["turn_seconds"] == seconds
    assert shown["hand"]["deadline"] == (None if seconds is None else rules.iso_time(START + seconds))


@pytest.mark.parametrize("seconds", [9, 86401, 0, -10, 10.5, "30", True])
def test_turn_seconds_out_of_range_is_invalid_rules(app, seconds):
    response = app.test_client().post("/v1/games", json={
        "variant": "classic", "players": [{"name": "A"}, {"name": "B"}], "rules": {"turn_seconds": seconds}})
    body = assert_problem(response, 422, "invalid_rules", "rules.turn_seconds")
    assert body["params"] == {"option": "turn_seconds", "min": 10, "max": 86400}


def test_untimed_games_have_no_deadline_and_no_schedule(app, clock, redis_client, key_prefix):
    game_id, tokens = create(app, turn_seconds=None)
    seat = view(app, game_id)["hand"]["turn"]
    assert app.test_client().post(f"/v1/games/{game_id}/pass", headers=bearer(tokens[seat])).status_code == 200
    assert view(app, game_id)["hand"]["deadline"] is None
    assert due_score(redis_client, key_prefix, game_id) is None
    clock.move(10**6)
    assert view(app, game_id)["players"][seat]["timeouts"] == 0


UNSTARTED_TTL = 3600  # UNSTARTED_GAME_TTL_SECONDS' default


@pytest.mark.parametrize("seconds", [None, 10, 86400])
def test_a_match_nobody_moved_in_is_kept_until_well_after_its_first_deadline(app, clock, redis_client, key_prefix,
                                                                              seconds):
    game_id, _ = create(app, turn_seconds=seconds)
    kept = redis_client.ttl(game_keys(key_prefix, game_id).state)
    assert UNSTARTED_TTL - 5 <= kept - (seconds or 0) <= UNSTARTED_TTL


# --- the deadline in the view and in the schedule ---------------------------------------------

def test_the_deadline_follows_the_turn_and_is_scheduled(app, clock, redis_client, key_prefix):
    game_id, tokens = create(app)
    first = view(app, game_id)
    seat = first["hand"]["turn"]
    assert first["hand"]["deadline"] == rules.iso_time(START + TURN)
    assert due_score(redis_client, key_prefix, game_id) == START + TURN
    # A pass hands the turn over: the next seat's clock starts now.
    clock.move(7)
    passed = app.test_client().post(f"/v1/games/{game_id}/pass", headers=bearer(tokens[seat])).get_json()
    assert passed["hand"]["turn"] == 1 - seat and passed["hand"]["deadline"] == rules.iso_time(START + 7 + TURN)
    assert due_score(redis_client, key_prefix, game_id) == START + 7 + TURN
    # A draw keeps the turn, and its deadline.
    clock.move(3)
    client = app.test_client()
    other = 1 - seat
    assert client.post(f"/v1/games/{game_id}/pass", headers=bearer(tokens[other])).status_code == 200
    deadline = view(app, game_id)["hand"]["deadline"]
    assert deadline == rules.iso_time(START + 10 + TURN)
    clock.move(2)
    drawn = client.post(f"/v1/games/{game_id}/draw", json={"source": "stock"}, headers=bearer(tokens[seat])).get_json()
    assert drawn["hand"]["phase"] == "discard" and drawn["hand"]["deadline"] == deadline


def test_no_deadline_once_the_match_is_over(app, clock, redis_client, key_prefix):
    game_id, tokens = create(app)
    response = app.test_client().post(f"/v1/games/{game_id}/resign", headers=bearer(tokens[0]))
    assert response.status_code == 200 and response.get_json()["hand"] is None
    assert due_score(redis_client, key_prefix, game_id) is None


# --- lazy settlement ---------------------------------------------------------------------------

def reading_requests(game_id: str, tokens: list[str], absent: int) -> dict:
    present = tokens[1 - absent]
    return {
        "public view": lambda c: c.get(f"/v1/games/{game_id}"),
        "present player's view": lambda c: c.get(f"/v1/games/{game_id}", headers=bearer(present)),
        "absent player's view": lambda c: c.get(f"/v1/games/{game_id}", headers=bearer(tokens[absent])),
        "hint": lambda c: c.get(f"/v1/games/{game_id}/hint", headers=bearer(present)),
        "player's events": lambda c: c.get(f"/v1/games/{game_id}/events", headers=bearer(present)),
        "public events": lambda c: c.get(f"/v1/games/{game_id}/events"),
        "token re-issue": lambda c: c.post(f"/v1/games/{game_id}/players/{1 - absent}/token",
                                           headers={"X-API-Key": API_KEY}),
        "layoff dry run": lambda c: c.post(f"/v1/games/{game_id}/layoff?dry_run=true", headers=bearer(present)),
    }


REQUESTS = ["public view", "present player's view", "absent player's view", "hint", "player's events",
            "public events", "token re-issue", "layoff dry run"]


@pytest.mark.parametrize("request_name", REQUESTS)
def test_a_missed_turn_is_played_by_any_request_that_loads_the_game(app, clock, request_name):
    game_id, tokens = create(app, callback_url=f"{CALLBACK_HOST}/hooks")
    before = view(app, game_id)
    absent = before["hand"]["turn"]
    clock.move(TURN)  # the deadline itself: due
    reading_requests(game_id, tokens, absent)[request_name](app.test_client())
    after = stored_match(store_of(app), game_id)
    assert after.timeouts[absent] == 1 and after.timeouts[1 - absent] == 0
    assert after.turn == 1 - absent and after.hand.deadline == START + 2 * TURN
    replay = replayed(app, game_id)
    events = stored_events(store_of(app), game_id)
    timeout = next(e for e in events if e.type.value == "timeout")
    assert timeout.seat == absent and timeout.public == {"deadline": rules.iso_time(START + TURN), "timeouts": 1}
    played = [e for e in events if e.seq > timeout.seq and e.type.value in ("pass", "draw", "discard", "knock")]
    assert played and all(e.seat == absent and e.bot for e in played)
    assert replay.counts["timeout"] == 1
    shown = view(app, game_id)
    assert [p["timeouts"] for p in shown["players"]] == list(after.timeouts)
    assert shown["hand"]["deadline"] == rules.iso_time(START + 2 * TURN)


def test_a_settled_then_aborted_match_keeps_one_version_per_change(app, clock):
    # What the schema fuzzer met: a match it created with a deadline, loaded after that deadline
    # (the missed turn and the move played for it are saved), then aborted.
    game_id, _ = create(app)
    clock.move(TURN)
    version = view(app, game_id)["version"]
    aborted = app.test_client().post(f"/v1/games/{game_id}/abort", headers={"X-API-Key": API_KEY})
    assert aborted.status_code == 200 and aborted.get_json()["version"] == version + 1
    stored = load_game(store_of(app), game_id)
    assert "timeout" in [event.type.value for event in stored.events]
    assert invariant_violations(stored) == []


class RunningClock(Clock):
    """The service's clock set ahead and then running at the real pace, for a wait that spans a deadline."""

    def __init__(self, now: float):
        super().__init__(now)
        self.started = time.monotonic()

    def __call__(self) -> float:
        return self.now + time.monotonic() - self.started


@pytest.mark.parametrize("token_of", ["spectator", "present player"])
def test_a_long_poll_waiting_when_the_deadline_passes_is_answered_with_the_timeout(app, clock, token_of):
    game_id, tokens = create(app)
    shown = view(app, game_id)
    absent = shown["hand"]["turn"]
    token = tokens[1 - absent] if token_of == "present player" else None
    seen = app.test_client().get(f"/v1/games/{game_id}/events", headers=bearer(token)).get_json()["last_seq"]
    app.extensions[EXTENSION].games.ctx.clock = RunningClock(START + TURN - 0.5)  # due in half a second
    started = time.monotonic()
    response = app.test_client().get(f"/v1/games/{game_id}/events?after={seen}&wait=10",
                                     headers=bearer(token))
    waited = time.monotonic() - started
    assert response.status_code == 200, response.get_json()
    assert "timeout" in [event["type"] for event in response.get_json()["events"]]
    assert 0.4 < waited < 5  # answered at the deadline, not at the end of the wait
    assert stored_match(store_of(app), game_id).timeouts[absent] == 1


def test_nothing_is_played_before_the_deadline(app, clock):
    game_id, _ = create(app)
    version = view(app, game_id)["version"]
    clock.move(TURN - 1)
    assert view(app, game_id)["version"] == version


def test_the_settlement_is_saved_with_its_webhooks(app, clock, redis_client, key_prefix):
    game_id, _ = create(app, callback_url=f"{CALLBACK_HOST}/hooks")
    absent = view(app, game_id)["hand"]["turn"]
    clock.move(TURN + 1)
    view(app, game_id)
    feed = game_keys(key_prefix, game_id).feed
    ours = [fields for _, fields in redis_client.xrange(feed) if fields["subject"] == game_id and fields["url"]]
    assert [f["type"] for f in ours] == ["turn", "timeout", "turn"]
    timeout = json.loads(ours[1]["body"])
    assert timeout["data"]["seat"] == absent and timeout["data"]["timeouts"] == 1


def test_each_missed_turn_is_played_once_in_turn(app, clock):
    """The clock far ahead: each request settles the turn that is due; the next seat's clock
    starts when its turn begins."""
    game_id, _ = create(app)
    for missed in range(1, 5):
        clock.move(TURN)
        assert sum(view(app, game_id)["players"][s]["timeouts"] for s in (0, 1)) == missed
    replay = replayed(app, game_id)
    assert replay.counts["timeout"] == 4


def test_against_a_bot_a_missed_turn_comes_back_with_a_fresh_deadline(app, clock):
    game_id, tokens = create(app, players=[{"name": "Ann"}, {"name": "Robo", "bot": True}])
    assert view(app, game_id, tokens[0])["you"]["legal_actions"]
    deadline = START + TURN
    clock.move(TURN + 5)
    shown = view(app, game_id, tokens[0])
    assert shown["players"][0]["timeouts"] == 1 and shown["players"][1]["timeouts"] == 0
    assert shown["you"]["legal_actions"] or shown["status"] == "finished"
    if shown["status"] == "active":
        assert shown["hand"]["turn"] == 0 and shown["hand"]["deadline"] == rules.iso_time(deadline + 5 + TURN)
    replayed(app, game_id, bots=(None, "standard"))


# --- a late move and the timeout: exactly one applies -----------------------------------------

def a_move(shown: dict) -> tuple[str, dict | None]:
    legal = shown["you"]["legal_actions"]
    if "pass" in legal:
        return "pass", None
    if "draw" in legal:
        return "draw", {"source": "stock"}
    return "discard", {"card": shown["you"]["best_discard"]}


def send(app, game_id: str, token: str, move: tuple[str, dict | None]):
    action, body = move
    return app.test_client().post(f"/v1/games/{game_id}/{action}", headers=bearer(token),
                                  **({} if body is None else {"json": body}))


def to_draw_phase(app, game_id: str, tokens: list[str | None], seat: int) -> dict:
    """Play in time (the people's moves) until ``seat`` is to draw; returns its view."""
    rng = random.Random(3)
    for _ in range(20):
        shown = view(app, game_id, tokens[seat])
        if shown["you"]["legal_actions"] == ["draw"]:
            return shown
        mover = shown["hand"]["turn"]
        chosen = person_move(view(app, game_id, tokens[mover]), rng)
        assert send(app, game_id, tokens[mover], chosen).status_code == 200
    raise AssertionError("never the seat's turn to draw")


@pytest.mark.parametrize("opponent", [{"name": "Bob"}, {"name": "Robo", "bot": True}])
def test_a_move_after_the_deadline_is_refused_and_the_timeout_stands(app, clock, opponent):
    """The draw arrives late: the request settles the timeout first and the draw is not applied,
    not even to the turn that follows (against a bot that is the same person's turn to draw)."""
    game_id, tokens = create(app, players=[{"name": "Ann"}, opponent])
    to_draw_phase(app, game_id, tokens, 0)
    version = view(app, game_id)["version"]
    clock.move(TURN)
    late = send(app, game_id, tokens[0], ("draw", {"source": "stock"}))
    assert_problem(late, 409, "conflict")
    events = stored_events(store_of(app), game_id)
    timeout = next(e for e in events if e.type.value == "timeout")
    assert timeout.seat == 0 and stored_match(store_of(app), game_id).version > version
    assert not any(e.seat == 0 and not e.bot for e in events if e.seq > timeout.seq and e.type.value in ACTIONS)
    replayed(app, game_id, bots=(None, "standard" if opponent.get("bot") else None))


def test_a_late_move_with_if_match_is_412_like_any_race_it_lost(app, clock):
    """The deadline's move took the version the late move named: 412 version_mismatch, as the
    contract says of a conditional move that lost a race, with the version the game is at."""
    game_id, tokens = create(app, players=[{"name": "Ann"}, {"name": "Bob"}])
    version = to_draw_phase(app, game_id, tokens, 0)["version"]
    clock.move(TURN)
    late = app.test_client().post(f"/v1/games/{game_id}/draw", json={"source": "stock"},
                                  headers={**bearer(tokens[0]), "If-Match": f'"{version}"'})
    assert_problem(late, 412, "version_mismatch")
    now_at = stored_match(store_of(app), game_id).version
    assert now_at > version and late.get_json()["params"]["version"] == now_at
    assert any(e.type.value == "timeout" for e in stored_events(store_of(app), game_id))


@pytest.fixture
def raced(redis_url, key_prefix):
    store = InterleavingStore(store_from_url(redis_url, key_prefix))
    app = build_app(store, REDIS_URL=redis_url, KEY_PREFIX=key_prefix)
    yield app, store, clocked(app)
    store.close()


def test_a_timeout_settled_while_a_move_is_in_flight_wins(raced):
    """The move loads the game just before the deadline; a read settles the timeout before the
    move saves: the move is refused (409), the timeout stands."""
    app, store, clock = raced
    game_id, tokens = create(app)
    shown = view(app, game_id, tokens[view(app, game_id)["hand"]["turn"]])
    seat = shown["you"]["seat"]
    clock.move(TURN - 1)
    reader = app.test_client()

    def settle_in_between():
        clock.move(1)
        return reader.get(f"/v1/games/{game_id}")

    settled = slip_in(store, settle_in_between)
    late = send(app, game_id, tokens[seat], a_move(shown))
    assert settled[0].status_code == 200
    assert_problem(late, 409, "conflict")
    match = stored_match(store_of(app), game_id)
    assert match.timeouts[seat] == 1
    assert not any(e.seat == seat and not e.bot and e.type.value in ACTIONS for e in stored_events(store_of(app), game_id))
    replayed(app, game_id)


def test_a_move_saved_before_the_settlement_wins(raced):
    """The worker's settle loads the game past the deadline; the person's move (made in time)
    saves first: the settle finds nothing due any more and plays nothing."""
    app, store, clock = raced
    game_id, tokens = create(app)
    shown = view(app, game_id, tokens[view(app, game_id)["hand"]["turn"]])
    seat = shown["you"]["seat"]
    clock.move(1)  # the move is made one second into the turn
    moved = slip_in(store, lambda: send(app, game_id, tokens[seat], a_move(shown)))
    # Only the settling thread (this one) sees the deadline passed.
    clock.ahead[threading.get_ident()] = START + TURN
    with app.app_context():
        app.extensions[EXTENSION].games.settle(game_id)
    assert moved[0].status_code == 200
    match = stored_match(store_of(app), game_id)
    assert match.timeouts == (0, 0) and match.version == moved[0].get_json()["version"]
    replayed(app, game_id)


def settle_in(app, game_id: str) -> None:
    """What the worker calls when a deadline comes due (here with the app's metrics)."""
    with app.app_context():
        app.extensions[EXTENSION].games.settle(game_id)


def test_racing_threads_settle_a_timeout_once(redis_url, key_prefix):
    """The worker's settle, a read and the late move, at once on two apps: one timeout, no move."""
    apps = [build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix) for _ in range(2)]
    try:
        clocks = [clocked(a) for a in apps]
        game_id, tokens = create(apps[0])
        shown = view(apps[0], game_id, tokens[view(apps[0], game_id)["hand"]["turn"]])
        seat = shown["you"]["seat"]
        for clock in clocks:
            clock.move(TURN)
        barrier = threading.Barrier(3)
        answers = {}

        def run(name, call):
            barrier.wait()
            answers[name] = call()

        calls = {
            "settle": lambda: settle_in(apps[0], game_id),
            "read": lambda: apps[1].test_client().get(f"/v1/games/{game_id}"),
            "move": lambda: send(apps[1], game_id, tokens[seat], a_move(shown)),
        }
        threads = [threading.Thread(target=run, args=item) for item in calls.items()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert answers["read"].status_code == 200 and answers["move"].status_code == 409
        match = stored_match(store_of(apps[0]), game_id)
        assert match.timeouts[seat] == 1
        assert replayed(apps[0], game_id).counts["timeout"] == 1
    finally:
        for a in apps:
            store_of(a).close()


class CountingStore:
    """The real store, counting the loads, the saves tried (won or lost) and the long-polls'
    waits; with ``down``, every load fails as a Redis that went away would; beyond
    ``wait_slots`` waits, a wait is refused as a process with every slot taken refuses it."""

    def __init__(self, inner):
        self.inner = inner
        self.loads = self.saves = self.waits = 0
        self.down = False
        self.wait_slots: int | None = None

    def load(self, *args, **kwargs):
        self.loads += 1
        if self.down:
            raise StoreError("the store is unreachable")
        return self.inner.load(*args, **kwargs)

    def save(self, *args, **kwargs):
        self.saves += 1
        return self.inner.save(*args, **kwargs)

    def wait_for_events(self, *args, **kwargs):
        self.waits += 1
        if self.wait_slots is not None and self.waits > self.wait_slots:
            raise LongPollCapacity(self.wait_slots)
        return self.inner.wait_for_events(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


@pytest.fixture
def counted(redis_url, key_prefix):
    """An app on a CountingStore, its clock due to reach the first deadline of its match in half
    a second, and that match: (app, store, game id, the last event's number)."""
    store = CountingStore(store_from_url(redis_url, key_prefix))
    app = build_app(store, REDIS_URL=redis_url, KEY_PREFIX=key_prefix)
    clocked(app)
    game_id, _ = create(app)
    seen = app.test_client().get(f"/v1/games/{game_id}/events").get_json()["last_seq"]
    app.extensions[EXTENSION].games.ctx.clock = RunningClock(START + TURN - 0.5)
    yield app, store, game_id, seen
    store.close()


def test_long_polls_waiting_across_a_deadline_do_not_all_race_to_settle_it(counted):
    """Fifty spectators' long-polls span the deadline: all get the timeout, few try to save it."""
    app, store, game_id, seen = counted
    answers = []

    def follow():
        answers.append(app.test_client().get(f"/v1/games/{game_id}/events?after={seen}&wait=10").get_json())

    threads = [threading.Thread(target=follow) for _ in range(50)]
    for thread in threads:
        thread.start()
    time.sleep(0.3)  # every long-poll has loaded the game and waits (the deadline is 0.2 s away)
    store.loads = 0
    for thread in threads:
        thread.join(15)
    assert len(answers) == 50
    assert all("timeout" in [event["type"] for event in answer["events"]] for answer in answers)
    assert replayed(app, game_id).counts["timeout"] == 1
    print(f"50 long-polls across the deadline: {store.loads} loads, {store.saves} saves tried")
    # Racing at the deadline, each would load the game (often twice) and many would try to save.
    assert store.loads <= 20 and store.saves <= 5


def test_a_store_failing_when_a_waiting_long_poll_settles_the_deadline_is_503(counted):
    app, store, game_id, seen = counted
    answers = []
    waiter = threading.Thread(target=lambda: answers.append(
        app.test_client().get(f"/v1/games/{game_id}/events?after={seen}&wait=10")))
    waiter.start()
    time.sleep(0.2)  # it has loaded the game and waits for the deadline
    store.down = True
    waiter.join(15)
    assert_problem(answers[0], 503, "store_unavailable")
    assert store.saves == 0
    store.down = False
    assert stored_match(store_of(app), game_id).timeouts == (0, 0)


def test_a_long_poll_answered_with_the_timeout_takes_no_second_slot(counted):
    """Every slot is taken by others once the waiter wakes at the deadline: it is still
    answered with the timeout it waited for, not refused."""
    app, store, game_id, seen = counted
    store.wait_slots = 1
    response = app.test_client().get(f"/v1/games/{game_id}/events?after={seen}&wait=10")
    assert response.status_code == 200, response.get_json()
    assert "timeout" in [event["type"] for event in response.get_json()["events"]]
    assert store.waits == 1


def test_on_the_embedded_store_a_deadline_is_played_on_time_without_any_request():
    """``ginrummy serve`` alone: no worker, and nobody reads the match; the service's own
    process plays the missed turn once, on time, and schedules the next turn's deadline."""
    app = build_app(REDIS_URL="memory://")
    created = app.test_client().post("/v1/games", json={
        "variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}], "rules": {"turn_seconds": 10}})
    game_id = created.get_json()["game"]["id"]
    deadline = created.get_json()["game"]["hand"]["deadline"]
    store = store_of(app)

    def timeouts() -> list[rules.Event]:  # read from the store itself: a read through the service would settle
        return [e for e in stored_events(store, game_id) if e.type is rules.EventType.TIMEOUT]

    ends = time.monotonic() + 10 + 5
    while not timeouts():
        assert time.monotonic() < ends, f"not played on time (deadline {deadline})"
        time.sleep(0.1)
    played_at = time.time()
    due = datetime.fromisoformat(deadline).timestamp()  # shown to the second, never late
    assert due <= played_at < due + 3
    time.sleep(1)
    assert len(timeouts()) == 1
    assert store.timers.claim_due(played_at + 9, played_at + 60, 10) == []  # the next turn's: not due yet
    assert [t.subject for t in store.timers.claim_due(played_at + 11, played_at + 60, 10)] == [game_id]
