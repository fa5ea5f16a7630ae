"""If-Match, Idempotency-Key and concurrent moves: a move is applied once or not at all, the
loser of a race gets a clean 409/412, and a retried request gets its first answer again."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from service.store import store_from_url
from service.store.base import GameStore
from tests.api.conftest import build_app
from tests.api.support import PROBLEM, Table, seat_to_act, store_of
from tests.api.test_errors import assert_problem


@pytest.fixture
def table(redis_app, client) -> Table:
    return Table.open(redis_app, client, "classic", seed=17)


def test_every_answer_carries_the_version_as_etag(table):
    seat = seat_to_act(table.view())
    first = table.get(seat)
    assert first.headers["ETag"] == f'"{first.get_json()["version"]}"'
    moved = table.act(seat, "pass")
    assert moved.headers["ETag"] == f'"{moved.get_json()["version"]}"'
    assert moved.get_json()["version"] == first.get_json()["version"] + 1


def test_if_none_match_answers_304_while_unchanged(table):
    etag = table.get(None).headers["ETag"]
    unchanged = table.get(None, headers={"If-None-Match": etag})
    assert unchanged.status_code == 304 and unchanged.headers["ETag"] == etag and not unchanged.data
    # What the 200 says about caching, the 304 says again (RFC 9110, 15.4.5).
    assert unchanged.headers["Cache-Control"] == "private, no-cache" and unchanged.headers["Vary"] == "Authorization"
    assert table.act(seat_to_act(table.view()), "pass").status_code == 200
    assert table.get(None, headers={"If-None-Match": etag}).status_code == 200


@pytest.mark.parametrize("form", ['"{v}"', "{v}", '"0", "{v}"', "*"])
def test_if_match_with_the_current_version_applies(table, form):
    view = table.view()
    response = table.act(seat_to_act(view), "pass", headers={"If-Match": form.format(v=view["version"])})
    assert response.status_code == 200 and response.get_json()["version"] == view["version"] + 1


def test_a_retry_with_the_same_key_returns_the_first_answer_without_acting_twice(table):
    seat = seat_to_act(table.view())
    key = {"Idempotency-Key": "move-1"}
    first = table.act(seat, "pass", headers=key)
    before = table.snapshot()
    again = table.act(seat, "pass", {}, headers=key)  # {} and no body are the same request
    assert again.status_code == 200 and again.get_json() == first.get_json()
    assert again.headers["ETag"] == first.headers["ETag"]
    assert table.snapshot() == before
    # Even after the game moved on, the key still answers with the first response.
    other = seat_to_act(table.view())
    assert table.act(other, "pass").status_code == 200
    assert table.act(seat, "pass", headers=key).get_json() == first.get_json()


def test_keys_are_scoped_per_seat(table):
    seat = seat_to_act(table.view())
    assert table.act(seat, "pass", headers={"Idempotency-Key": "same"}).status_code == 200
    other = seat_to_act(table.view())
    second = table.act(other, "pass", headers={"Idempotency-Key": "same"})
    assert second.status_code == 200 and second.get_json()["you"]["seat"] == other


def test_a_refused_request_stores_no_answer_under_its_key(table):
    seat = seat_to_act(table.view())
    key = {"Idempotency-Key": "early"}
    assert table.act(1 - seat, "pass", headers=key).status_code == 409
    # The same key works once the move becomes legal.
    assert table.act(seat, "pass").status_code == 200
    assert table.act(1 - seat, "pass", headers=key).status_code == 200


class InterleavingStore:
    """The real store, with a hook run once just before the next save: a test uses it to make
    another request win the race deterministically, between this request's load and save."""

    def __init__(self, inner: GameStore):
        self.inner = inner
        self.before_next_save = None

    def save(self, *args, **kwargs):
        hook, self.before_next_save = self.before_next_save, None
        if hook is not None:
            hook()
        return self.inner.save(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


@pytest.fixture
def raced(redis_url, key_prefix):
    """A table whose store lets a test slip a request in before the next save."""
    store = InterleavingStore(store_from_url(redis_url, key_prefix))
    app = build_app(store, REDIS_URL=redis_url, KEY_PREFIX=key_prefix)
    table = Table.open(app, app.test_client(), "classic", seed=17)
    yield table, store
    store.close()


def slip_in(store: InterleavingStore, send) -> list:
    """Arrange for ``send()`` to run (in another thread, to completion) before the next save."""
    answers = []

    def hook():
        worker = threading.Thread(target=lambda: answers.append(send()))
        worker.start()
        worker.join()

    store.before_next_save = hook
    return answers


def test_losing_the_race_is_a_clean_409_conflict(raced):
    table, store = raced
    seat = seat_to_act(table.view())
    winner = slip_in(store, lambda: table.app.test_client().post(f"/v1/games/{table.game_id}/pass", headers=table.auth(seat)))
    loser = table.act(seat, "pass")
    assert winner[0].status_code == 200
    body = assert_problem(loser, 409, "conflict")
    assert body["detail"] == "the game changed while your move was applied; reload and retry"
    assert table.view()["version"] == winner[0].get_json()["version"]


def test_losing_the_race_with_if_match_is_412(raced):
    table, store = raced
    view = table.view()
    seat = seat_to_act(view)
    slip_in(store, lambda: table.app.test_client().post(f"/v1/games/{table.game_id}/pass", headers=table.auth(seat)))
    assert_problem(table.act(seat, "pass", headers={"If-Match": str(view["version"])}), 412, "version_mismatch")


def test_losing_the_race_to_the_same_request_returns_its_answer(raced):
    table, store = raced
    seat = seat_to_act(table.view())
    key = {**table.auth(seat), "Idempotency-Key": "double-click"}
    winner = slip_in(store, lambda: table.app.test_client().post(f"/v1/games/{table.game_id}/pass", headers=key))
    loser = table.act(seat, "pass", headers={"Idempotency-Key": "double-click"})
    assert loser.status_code == 200 and loser.get_json() == winner[0].get_json()
    assert table.view()["version"] == loser.get_json()["version"]


@pytest.mark.parametrize("same_key", [False, True])
def test_many_workers_sending_the_same_move_apply_it_once(redis_url, key_prefix, same_key):
    """Real threads, real Redis, two apps (two workers): one move, whatever the timing."""
    apps = [build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix) for _ in range(2)]
    table = Table.open(apps[0], apps[0].test_client(), "classic", seed=17)
    seat = seat_to_act(table.view())
    before = table.view()["version"]
    barrier = threading.Barrier(8)

    def send(n: int):
        headers = {**table.auth(seat), "Idempotency-Key": "k" if same_key else f"k{n}"}
        client = apps[n % 2].test_client()
        barrier.wait()
        return client.post(f"/v1/games/{table.game_id}/pass", headers=headers)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, range(8)))
    ok = [a for a in answers if a.status_code == 200]
    assert table.view()["version"] == before + 1
    assert all(a.status_code in (200, 409) for a in answers)
    assert all(a.mimetype == PROBLEM for a in answers if a.status_code == 409)
    if same_key:
        assert len(ok) == 8 and all(a.get_json() == ok[0].get_json() for a in ok)
    else:
        assert len(ok) == 1
    for app in apps:
        store_of(app).close()
