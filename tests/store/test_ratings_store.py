"""The ratings port's contract (service/store/ratings.py) on the embedded store, one Redis and a
Redis Cluster: a match applied once, compare-and-set on the standings, the leaderboard, the
history, scopes apart."""
from __future__ import annotations

import json

import pytest

from service.store.areas import Areas
from service.store.ratings import Change, HistoryEntry, StaleStandings, Standing
from service.store.ratings_redis import HISTORY_KEPT

SCOPE, VARIANT = "key-a", "classic"


def change(before: Standing | None, external_id: str, rating: float, game_id: str, rd: float = 80.0,
           ranked: bool = True, won: bool = True) -> Change:
    """The change of one match to a player's standing."""
    games = before.games if before else 0
    after = Standing(external_id, f"name of {external_id}", rating, rd, 0.06, games + 1,
                     (before.wins if before else 0) + won, (before.losses if before else 0) + (not won), 0)
    delta = rating - (before.rating if before else 1500.0)
    return Change(before, after, HistoryEntry(game_id, "2026-12-01T10:00:00Z", rating, rd, delta), ranked)


def record(game_id: str) -> str:
    return json.dumps([{"game": game_id}])


def play(ratings, game_id: str, new: dict[str, float], scope: str = SCOPE, variant: str = VARIANT,
         ranked: bool = True) -> str:
    """Apply a match that leaves each player of ``new`` at that rating."""
    before = ratings.standings(scope, variant, list(new))
    changes = [change(old, external_id, rating, game_id, ranked=ranked)
               for old, (external_id, rating) in zip(before, new.items())]
    return ratings.apply(scope, variant, game_id, changes, record(game_id))


def snapshot(ratings, players: list[str], scope: str = SCOPE, variant: str = VARIANT) -> tuple:
    return (ratings.standings(scope, variant, players),
            [ratings.history(scope, variant, player, 0, 50) for player in players],
            ratings.board(scope, variant, 0, 50), ratings.board_size(scope, variant))


def test_a_match_is_applied_once(areas: Areas):
    ratings = areas.ratings
    assert ratings.applied(SCOPE, VARIANT, "g1") is None
    assert play(ratings, "g1", {"ann": 1600.0, "bob": 1400.0}) == record("g1")
    assert ratings.applied(SCOPE, VARIANT, "g1") == record("g1")
    ann, bob = ratings.standings(SCOPE, VARIANT, ["ann", "bob"])
    assert (ann.rating, ann.games, ann.wins, bob.rating, bob.games) == (1600.0, 1, 1, 1400.0, 1)
    assert [entry.game_id for entry in ratings.history(SCOPE, VARIANT, "ann", 0, 10)] == ["g1"]
    kept = snapshot(ratings, ["ann", "bob"])

    # Applied again (a reader that died after applying it), even computed from the new
    # standings: the first record comes back and nothing changes.
    again = [change(ann, "ann", 1700.0, "g1"), change(bob, "bob", 1300.0, "g1")]
    assert ratings.apply(SCOPE, VARIANT, "g1", again, record("other")) == record("g1")
    stale = [change(None, "ann", 1800.0, "g1"), change(None, "bob", 1200.0, "g1")]
    assert ratings.apply(SCOPE, VARIANT, "g1", stale, record("other")) == record("g1")
    assert snapshot(ratings, ["ann", "bob"]) == kept


def test_a_change_computed_from_a_standing_that_moved_is_refused_whole(areas: Areas):
    ratings = areas.ratings
    play(ratings, "g1", {"ann": 1600.0, "bob": 1400.0})
    ann_then, cy_then = ratings.standings(SCOPE, VARIANT, ["ann", "cy"])
    play(ratings, "g2", {"ann": 1650.0, "dee": 1350.0})  # ann moved meanwhile
    kept = snapshot(ratings, ["ann", "bob", "cy", "dee"])
    with pytest.raises(StaleStandings):
        ratings.apply(SCOPE, VARIANT, "g3", [change(cy_then, "cy", 1550.0, "g3"),
                                             change(ann_then, "ann", 1500.0, "g3", won=False)], record("g3"))
    with pytest.raises(StaleStandings):  # "never rated" is a standing too: cy, unlike dee
        ratings.apply(SCOPE, VARIANT, "g3", [change(None, "cy", 1550.0, "g3"),
                                             change(None, "dee", 1500.0, "g3")], record("g3"))
    assert snapshot(ratings, ["ann", "bob", "cy", "dee"]) == kept  # cy's part was not applied either
    assert ratings.applied(SCOPE, VARIANT, "g3") is None
    assert play(ratings, "g3", {"cy": 1550.0, "ann": 1500.0}) == record("g3")  # computed again: applied


def test_the_board_ranks_players_by_rating_a_page_at_a_time(areas: Areas):
    ratings = areas.ratings
    ranked = {f"p{n}": 1000.0 + 37 * ((n * 7) % 13) for n in range(13)}
    for n, (player, rating) in enumerate(ranked.items()):
        play(ratings, f"g{n}", {player: rating})
    play(ratings, "new", {"newcomer": 1900.0}, ranked=False)  # provisional: not on the board
    best_first = sorted(ranked, key=lambda player: -ranked[player])
    assert ratings.board_size(SCOPE, VARIANT) == 13
    pages = [ratings.board(SCOPE, VARIANT, start, 5) for start in (0, 5, 10, 15)]
    assert [len(page) for page in pages] == [5, 5, 3, 0]
    rows = [row for page in pages for row in page]
    assert [row.rank for row in rows] == list(range(1, 14))
    assert [row.standing.external_id for row in rows] == best_first
    assert [row.standing.rating for row in rows] == [ranked[player] for player in best_first]
    for rank, player in enumerate(best_first, start=1):
        assert ratings.rank(SCOPE, VARIANT, player) == rank
    assert ratings.rank(SCOPE, VARIANT, "newcomer") is None
    assert ratings.rank(SCOPE, VARIANT, "unknown") is None


def test_a_player_moves_on_the_board_and_leaves_it_when_provisional_again(areas: Areas):
    ratings = areas.ratings
    play(ratings, "g1", {"ann": 1600.0, "bob": 1500.0, "cy": 1400.0})
    play(ratings, "g2", {"cy": 1700.0})
    assert [row.standing.external_id for row in ratings.board(SCOPE, VARIANT, 0, 10)] == ["cy", "ann", "bob"]
    play(ratings, "g3", {"ann": 1650.0}, ranked=False)  # its RD grew past the limit (a long pause)
    assert [row.standing.external_id for row in ratings.board(SCOPE, VARIANT, 0, 10)] == ["cy", "bob"]
    assert (ratings.rank(SCOPE, VARIANT, "ann"), ratings.board_size(SCOPE, VARIANT)) == (None, 2)
    assert ratings.standings(SCOPE, VARIANT, ["ann"])[0].rating == 1650.0


def test_the_history_is_newest_first_and_capped(areas: Areas):
    ratings = areas.ratings
    matches = HISTORY_KEPT + 5
    for n in range(matches):
        play(ratings, f"g{n}", {"ann": 1500.0 + n})
    newest = ratings.history(SCOPE, VARIANT, "ann", 0, 3)
    assert [(entry.game_id, entry.rating) for entry in newest] == \
        [(f"g{n}", 1500.0 + n) for n in range(matches - 1, matches - 4, -1)]
    assert newest[0] == HistoryEntry(f"g{matches - 1}", "2026-12-01T10:00:00Z", 1500.0 + matches - 1, 80.0, 1.0)
    everything = ratings.history(SCOPE, VARIANT, "ann", 0, 2 * matches)
    assert len(everything) == HISTORY_KEPT
    assert everything[-1].game_id == f"g{matches - HISTORY_KEPT}"
    assert ratings.history(SCOPE, VARIANT, "ann", HISTORY_KEPT - 2, 10) == everything[-2:]
    assert ratings.history(SCOPE, VARIANT, "ann", HISTORY_KEPT, 10) == []
    assert ratings.standings(SCOPE, VARIANT, ["ann"])[0].games == matches  # the record counts them all


def test_scopes_and_variants_never_see_each_other(areas: Areas):
    ratings = areas.ratings
    play(ratings, "g1", {"ann": 1600.0, "bob": 1400.0}, scope="key-a")
    play(ratings, "g2", {"ann": 1300.0}, scope="key-b")
    play(ratings, "g1", {"ann": 1700.0}, scope="key-a", variant="box")  # the same game id elsewhere
    assert ratings.applied("key-b", VARIANT, "g1") is None
    a, b, box = (ratings.standings(scope, variant, ["ann", "bob"])
                 for scope, variant in (("key-a", VARIANT), ("key-b", VARIANT), ("key-a", "box")))
    assert [standing and standing.rating for standing in a] == [1600.0, 1400.0]
    assert [standing and standing.rating for standing in b] == [1300.0, None]
    assert [standing and standing.rating for standing in box] == [1700.0, None]
    assert [entry.game_id for entry in ratings.history("key-b", VARIANT, "ann", 0, 10)] == ["g2"]
    assert [row.standing.external_id for row in ratings.board("key-b", VARIANT, 0, 10)] == ["ann"]
    assert ratings.rank("key-b", VARIANT, "bob") is None and ratings.rank("key-a", VARIANT, "bob") == 2
    assert ratings.board_size("key-c", VARIANT) == 0 and ratings.board("key-c", VARIANT, 0, 10) == []
