"""Resign (a player) and abort (the API key that created the match) through HTTP on the real
Redis: the results they leave, who may ask, and each against a racing move (exactly one applies)."""
from __future__ import annotations

import pytest

from service.store import store_from_url
from tests.api.checks import LogReplay, person_move, stored_events, stored_match
from tests.api.conftest import build_app
from tests.api.sessions import Session
from tests.api.support import API_KEY, store_of
from tests.api.test_errors import assert_problem
from tests.api.test_retries import InterleavingStore, slip_in

OTHER_KEY = "resign-abort-other-key"


@pytest.fixture
def app(redis_url, key_prefix):
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, API_KEYS=f"{API_KEY},{OTHER_KEY}")
    yield app
    store_of(app).close()


def people(variant: str) -> list[tuple[str, None]]:
    return [("Ann", None), ("Bob", None), ("Cy", None)][: 2 if variant == "classic" else 3]


def after_hands(app, variant: str, hands: int, seed: int) -> Session:
    """A match of people after ``hands`` scored hands (at least one of them won)."""
    session = Session.open(app, variant, people(variant), seed=seed)
    session.play_until(lambda: session.replay.counts.get("hand_scored", 0) >= hands
                       and any(session.match().scores))
    return session


def expected_winner(view: dict, resigned: int) -> int:
    """The contract: the other player (classic); in box the remaining player with the highest total
    (ties: more hands won, then the lower seat)."""
    others = [p for p in view["players"] if p["seat"] != resigned]
    return max(others, key=lambda p: (p["score"], p["hands_won"], -p["seat"]))["seat"]


@pytest.mark.parametrize(("variant", "leader_resigns"),
                         [("classic", True), ("classic", False), ("box", True), ("box", False)])
def test_resigning_ends_the_match_with_totals_as_they_stand(app, variant, leader_resigns):
    session = after_hands(app, variant, 2, seed=61)
    before = session.view(None)
    scores = {p["seat"]: p["score"] for p in before["players"]}
    leader = max(scores, key=lambda s: (scores[s], -s))
    if leader_resigns:
        resigning = leader
    else:
        resigning = min((s for s in scores if s != leader), key=lambda s: scores[s])
    response = session.post(resigning, "resign")
    assert response.status_code == 200, response.get_json()
    view = response.get_json()
    result = view["result"]
    assert view["status"] == "finished" and view["hand"] is None and view["you"]["seat"] == resigning
    assert result["forfeit"] == resigning and result["status"] == "finished"
    assert result["winner"] == expected_winner(before, resigning)
    assert result["players"] == [{"seat": s, "hand_points": scores[s], "game_bonus": 0, "line_bonus": 0,
                                  "shutout_bonus": 0, "total": scores[s]} for s in sorted(scores)]
    new = session.sync()
    assert [(e.type.value, e.seat) for e in new] == [("resign", resigning), ("match_finished", None)]
    # The event is the result as the match ended; the view adds the rating changes (none: unrated).
    assert result.pop("rating_changes") is None
    assert new[1].public == result and all(e.turn is None for e in new)
    result["rating_changes"] = None
    assert session.view(None)["result"] == result


def test_a_finished_match_refuses_moves_resignations_and_aborts(app):
    session = Session.open(app, "classic", people("classic"), seed=5)
    assert session.post(0, "resign").status_code == 200
    version = session.match().version
    for seat in (0, 1):
        assert_problem(session.post(seat, "resign"), 409, "game_finished")
        body = assert_problem(session.post(seat, "draw", {"source": "stock"}), 409, "game_finished")
        assert body["params"] == {"status": "finished"}
    assert_problem(session.client.post(f"/v1/games/{session.game_id}/abort", headers={"X-API-Key": API_KEY}),
                   409, "game_finished")
    assert session.match().version == version


def abort(session: Session, headers: dict):
    return session.client.post(f"/v1/games/{session.game_id}/abort", headers=headers)


def test_abort_ends_the_match_without_a_winner(app):
    session = after_hands(app, "classic", 1, seed=62)
    scores = [p["score"] for p in session.view(None)["players"]]
    response = abort(session, {"X-API-Key": API_KEY})
    assert response.status_code == 200
    view = response.get_json()
    assert view["status"] == "aborted" and view["hand"] is None and "you" not in view
    assert view["result"] == {"status": "aborted", "winner": None, "forfeit": None, "players": [
        {"seat": s, "hand_points": scores[s], "game_bonus": 0, "line_bonus": 0, "shutout_bonus": 0,
         "total": scores[s]} for s in (0, 1)], "rating_changes": None}
    assert [(e.type.value, e.seat) for e in session.sync()] == [("abort", None), ("match_finished", None)]
    body = assert_problem(session.post(0, "draw", {"source": "stock"}), 409, "game_finished")
    assert body["params"] == {"status": "aborted"}
    assert_problem(abort(session, {"X-API-Key": API_KEY}), 409, "game_finished")


def test_only_the_api_key_that_created_the_match_may_abort_it(app):
    session = Session.open(app, "box", people("box"), seed=7)
    before = session.match()
    assert_problem(abort(session, {"X-API-Key": OTHER_KEY}), 403, "forbidden")
    assert_problem(abort(session, {}), 401, "unauthorized")
    assert_problem(abort(session, {"X-API-Key": "unknown-key"}), 401, "unauthorized")
    assert_problem(abort(session, session.auth(0)), 401, "unauthorized")
    assert session.match() == before


# --- each against a racing move -------------------------------------------------------------

@pytest.fixture
def raced(redis_url, key_prefix):
    store = InterleavingStore(store_from_url(redis_url, key_prefix))
    app = build_app(store, REDIS_URL=redis_url, KEY_PREFIX=key_prefix)
    session = Session.open(app, "classic", people("classic"), seed=17)
    yield session, store
    store.close()


def move_sender(session: Session):
    seat = session.to_act()
    action, body = person_move(session.view(seat), session.rng)
    client = session.app.test_client()
    return lambda: client.post(f"/v1/games/{session.game_id}/{action}", headers=session.auth(seat),
                               **({} if body is None else {"json": body}))


def ender(session: Session, kind: str, seat: int):
    client = session.app.test_client()
    if kind == "resign":
        return lambda: client.post(f"/v1/games/{session.game_id}/resign", headers=session.auth(seat))
    return lambda: client.post(f"/v1/games/{session.game_id}/abort", headers={"X-API-Key": API_KEY})


@pytest.mark.parametrize("kind", ["resign", "abort"])
def test_a_move_saved_first_makes_the_racing_end_fail(raced, kind):
    session, store = raced
    mover = session.to_act()
    moved = slip_in(store, move_sender(session))
    lost = ender(session, kind, 1 - mover)()
    assert moved[0].status_code == 200
    assert_problem(lost, 409, "conflict")
    match = stored_match(store_of(session.app), session.game_id)
    assert not match.is_finished and match.version == moved[0].get_json()["version"]
    LogReplay([None, None]).check(stored_events(store_of(session.app), session.game_id))


@pytest.mark.parametrize("kind", ["resign", "abort"])
def test_an_end_saved_first_makes_the_racing_move_fail(raced, kind):
    session, store = raced
    mover = session.to_act()
    send = move_sender(session)
    ended = slip_in(store, ender(session, kind, 1 - mover))
    lost = send()
    assert ended[0].status_code == 200
    assert_problem(lost, 409, "conflict")
    events = stored_events(store_of(session.app), session.game_id)
    assert events[-1].type.value == "match_finished"
    assert not any(e.seat == mover and e.type.value in ("draw", "pass", "discard", "knock") for e in events)
    LogReplay([None, None]).check(events)
