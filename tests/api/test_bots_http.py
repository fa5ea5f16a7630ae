"""Playing against the computer through HTTP on the real Redis: bots play inline, legally,
marked in the log, and never show anyone a card they may not see; a bot sitter advises a
human captain; races and retries with bot seats apply a move (and the bots' replies) once.

Nothing here depends on how well a bot plays: only on what it may do and see.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from service.store import store_from_url
from tests.api.checks import person_move
from tests.api.conftest import build_app
from tests.api.sessions import Session, seats_of
from tests.api.support import store_of
from tests.api.test_errors import assert_problem
from tests.api.test_retries import InterleavingStore, slip_in

LEVELS = ["easy", "standard", "strong"]


def bot_moves(session: Session) -> int:
    return sum(1 for event in session.truth.values() if event.bot and event.type.value != "advice")


def check_sitter_advice(session: Session) -> int:
    """Before each move of a human captain whose sitter is a bot, that sitter's advice is the
    last event (unless the hand's advice is used up). Returns how many moves were advised."""
    roles: list[str] = []
    advice_in_hand = 0
    advised = 0
    events = [session.truth[seq] for seq in sorted(session.truth)]
    for previous, event in zip(events, events[1:]):
        kind = event.type.value
        if kind == "deal":
            roles, advice_in_hand = event.public["roles"], 0
        if kind == "advice":
            advice_in_hand += 1
            assert event.bot and event.secret["message"] and event.secret["action"] is not None
            assert set(event.seen_by) == {roles.index("captain"), roles.index("sitter")}
        if kind in ("draw", "pass", "discard", "knock", "layoff") and roles:
            captain, sitter = roles.index("captain"), roles.index("sitter")
            if event.seat == captain and session.levels[captain] is None and session.levels[sitter] is not None:
                if advice_in_hand < 30:
                    assert previous.type.value == "advice" and previous.seat == sitter, f"event {event.seq} unadvised"
                    advised += 1
    return advised


@pytest.fixture
def app(redis_app):
    return redis_app


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_a_person_plays_a_classic_match_against_each_level(app, level):
    session = Session.open(app, "classic", [("Ann", None), ("Robo", level)], seed=101)
    assert session.created["players"][1]["token"] is None and session.created["players"][0]["token"]
    final = session.play_to_the_end()
    assert final["result"]["winner"] in (0, 1)
    assert session.replay.finished and bot_moves(session) > 0
    assert session.replay.counts["hand_scored"] >= 1


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_a_person_plays_a_box_match_against_two_bots_of_each_level(app, level):
    """One person and two bots: whenever the person is captain, a bot sits beside them."""
    session = Session.open(app, "box", [("Bo", level), ("Ann", None), ("Cy", level)], seed=202)
    final = session.play_to_the_end()
    assert final["variant"] == "box" and session.replay.finished
    assert check_sitter_advice(session) > 0


def test_a_short_classic_match_against_a_bot_moving_first(app):
    """target_score 1: the first hand that scores ends it. The seed makes the bot the
    non-dealer, so the creation itself already holds the bot's first move."""
    for seed in range(40):
        session = Session.open(app, "classic", [("Ann", None), ("Robo", "standard")], seed=seed,
                               rules={"target_score": 1})
        if any(event.bot for event in session.truth.values()):
            break
    else:
        pytest.fail("no seed let the bot move first")
    # The creation's answer is the match as stored: the bot's move included.
    created = session.created["game"]
    assert created["hand"]["turn"] == 0 and created == session.view(None)
    assert created["version"] == session.match().version > 1
    session.play_to_the_end()


def test_two_people_and_a_bot_in_a_box_match(app):
    """The bot is box, captain or sitter by turns; each person sees the captain's cards only
    while they sit beside the captain."""
    session = Session.open(app, "box", [("Ann", None), ("Robo", "standard"), ("Bea", None)], seed=303,
                           rules={"target_score": 40})
    for seat in (0, 2):
        view = session.view(seat)
        session.check_view(view, seat, "the first view")
        if view["you"]["role"] == "sitter":
            assert set(view["you"]["partner"]["hand"]) == session.replay.hand.holdings[view["you"]["partner"]["seat"]]
    session.play_to_the_end(scan_every=3)
    check_sitter_advice(session)


def test_the_bot_sitter_advises_the_human_captain_only(app):
    """Advice is shown to the captain (view and events) and to no one else."""
    for seed in range(60):
        session = Session.open(app, "box", [("Ann", None), ("Bo", "standard"), ("Cy", "easy")], seed=seed)
        view = session.view(0)
        if view["you"]["role"] == "captain" and view["you"]["legal_actions"]:
            break
    else:
        pytest.fail("no seed made the person captain of the first hand")
    sitter = next(p["seat"] for p in view["players"] if p["role"] == "sitter")
    assert view["you"]["advice"] and view["you"]["advice"][-1]["seat"] == sitter
    advice = view["you"]["advice"][-1]
    assert advice["message"] and advice["action"]["type"] in view["you"]["legal_actions"]
    captain_events = session.check_events(0)
    public_events = session.check_events(None)
    shown = [e for e in captain_events if e["type"] == "advice"]
    assert shown and shown[-1]["message"] == advice["message"] and shown[-1]["bot"] is True
    assert all("message" not in e and "action" not in e for e in public_events if e["type"] == "advice")
    assert "advice" not in str(session.view(None))
    # Each of the captain's moves in this hand is preceded by fresh advice.
    hand = view["hand"]["number"]
    while session.match().hand is not None and session.match().hand.number == hand:
        session.play_move(0)
    assert check_sitter_advice(session) >= 2


@pytest.mark.parametrize("variant", ["classic", "box"])
def test_a_match_needs_a_person(client, variant):
    seats = [("A", "easy"), ("B", "strong"), ("C", "standard")][: 2 if variant == "classic" else 3]
    response = client.post("/v1/games", json={"variant": variant, "players": seats_of(seats)})
    assert_problem(response, 422, "no_human_seat", "players")


def test_bot_seats_have_no_token_and_every_view_names_them(app, client):
    response = client.post("/v1/games", json={"variant": "box", "players": [
        {"name": "Ann"}, {"name": "Robo", "bot": True}, {"name": "Eve", "bot": True, "level": "easy"}]})
    assert response.status_code == 201
    body = response.get_json()
    assert [p["token"] is None for p in body["players"]] == [False, True, True]
    levels = [None, "standard", "easy"]  # standard is the default level
    game_id, token = body["game"]["id"], body["players"][0]["token"]
    for view in (body["game"], client.get(f"/v1/games/{game_id}").get_json(),
                 client.get(f"/v1/games/{game_id}", headers={"Authorization": f"Bearer {token}"}).get_json()):
        assert [(p["bot"], p["level"]) for p in view["players"]] == [(lv is not None, lv) for lv in levels]


def test_a_level_without_bot_is_refused(client):
    response = client.post("/v1/games", json={"variant": "classic", "players": [
        {"name": "Ann", "level": "easy"}, {"name": "Bob"}]})
    assert_problem(response, 422, "invalid_request")


# --- races and retries with bot seats ------------------------------------------------------

@pytest.fixture
def raced_bot_session(redis_url, key_prefix):
    """A person against a bot on a store that lets a test slip a request in before a save."""
    store = InterleavingStore(store_from_url(redis_url, key_prefix))
    app = build_app(store, REDIS_URL=redis_url, KEY_PREFIX=key_prefix)
    session = Session.open(app, "classic", [("Ann", None), ("Robo", "standard")], seed=17)
    yield session, store
    store.close()


def person_request(session: Session, headers: dict | None = None):
    """A move of the person as a function another thread can send (with a fresh client)."""
    view = session.view(0)
    action, body = person_move(view, session.rng)
    client = session.app.test_client()
    kwargs = {} if body is None else {"json": body}
    path = f"/v1/games/{session.game_id}/{action}"
    return lambda: client.post(path, headers={**session.auth(0), **(headers or {})}, **kwargs)


@pytest.mark.parametrize("if_match", [False, True])
def test_of_two_racing_moves_with_a_bot_exactly_one_applies(raced_bot_session, if_match):
    session, store = raced_bot_session
    before = session.match()
    send = person_request(session)
    winner = slip_in(store, send)
    headers = {"If-Match": f'"{before.version}"'} if if_match else {}
    loser = person_request(session, headers)()
    assert winner[0].status_code == 200
    if if_match:
        assert_problem(loser, 412, "version_mismatch")
    else:
        assert_problem(loser, 409, "conflict")
    new = session.sync()
    people_moves = [e for e in new if e.seat == 0 and not e.bot and e.type.value != "advice"]
    assert len(people_moves) == 1
    assert session.match().version == winner[0].get_json()["version"]


def test_racing_threads_with_a_bot_apply_one_move_and_one_reply(redis_url, key_prefix):
    """Real threads on two apps (two workers), the same move sent twice at once."""
    apps = [build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix) for _ in range(2)]
    try:
        session = Session.open(apps[0], "classic", [("Ann", None), ("Robo", "strong")], seed=23)
        for _ in range(3):  # into the middle of the hand
            session.play_move(0)
        view = session.view(0)
        action, body = person_move(view, session.rng)
        barrier = threading.Barrier(2)

        def send(n: int):
            client = apps[n].test_client()
            barrier.wait()
            return client.post(f"/v1/games/{session.game_id}/{action}", headers=session.auth(0),
                               **({} if body is None else {"json": body}))

        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(send, range(2)))
        statuses = sorted(a.status_code for a in answers)
        assert statuses == [200, 409], [a.get_json() for a in answers]
        assert_problem(next(a for a in answers if a.status_code == 409), 409,
                       next(a for a in answers if a.status_code == 409).get_json()["code"])
        new = session.sync()
        assert len([e for e in new if e.seat == 0 and not e.bot and e.type.value != "advice"]) == 1
        ok = next(a for a in answers if a.status_code == 200)
        assert session.match().version == ok.get_json()["version"]
    finally:
        for app in apps:
            store_of(app).close()


def test_a_retried_move_does_not_play_the_bots_twice(app):
    session = Session.open(app, "classic", [("Ann", None), ("Robo", "standard")], seed=29)
    key = {"Idempotency-Key": "tap-1"}
    first = session.play_move(0, headers=key)
    count, version = session.replay.seq, session.match().version
    assert bot_moves(session) > 0
    # The same request again (same key, same body): the first answer, nothing played.
    view_before = session.view(None)
    again = session.post(0, *session.last_move, headers=key)
    assert again.status_code == 200 and again.get_json() == first.get_json()
    assert session.sync() == [] and session.replay.seq == count and session.match().version == version
    assert session.view(None) == view_before


def test_concurrent_retries_with_a_bot_answer_alike_and_apply_once(redis_url, key_prefix):
    apps = [build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix) for _ in range(2)]
    try:
        session = Session.open(apps[0], "classic", [("Ann", None), ("Robo", "easy")], seed=31)
        view = session.view(0)
        action, body = person_move(view, session.rng)
        barrier = threading.Barrier(4)

        def send(n: int):
            client = apps[n % 2].test_client()
            barrier.wait()
            return client.post(f"/v1/games/{session.game_id}/{action}",
                               headers={**session.auth(0), "Idempotency-Key": "double-tap"},
                               **({} if body is None else {"json": body}))

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(send, range(4)))
        assert all(a.status_code == 200 for a in answers), [a.get_json() for a in answers]
        assert all(a.get_json() == answers[0].get_json() for a in answers)
        new = session.sync()
        assert len([e for e in new if e.seat == 0 and not e.bot and e.type.value != "advice"]) == 1
    finally:
        for app in apps:
            store_of(app).close()
