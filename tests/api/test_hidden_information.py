"""No response shows a card to someone who may not see it (docs/rules.md, "Who sees what").

After every action of seeded matches, every view and every event page of every viewer
(each seat, and the public) is searched for the cards that viewer may not know: the stock
and the other hands, minus what the table has shown to everyone this hand (the cards that
went through the discard pile, a knock laid down). The truth comes from the stored record,
decoded with the engine. ``last_hand`` is left out: it shows the hands after they are over.
"""
from __future__ import annotations

import pytest

from tests.api.checks import AFTER_THE_HAND, cards_in, current_part
from tests.api.support import Table, holding, play_one, stock

HANDS_CHECKED = 3


def seen_by(table: Table, viewer: int | None, hand_number: int) -> set[str]:
    view = table.get(viewer)
    assert view.status_code == 200
    page = table.get(viewer, "/events")
    current_events = [
        e for e in page.get_json()["events"] if e["hand"] == hand_number and e["type"] not in AFTER_THE_HAND
    ]
    return cards_in(current_part(view.get_json())) | cards_in(current_events)


def unknown_to(match, viewer: int | None) -> set[str]:
    """Cards ``viewer`` may not know: the stock and every hand but its own (and, for the box
    sitter, the captain's)."""
    hidden = stock(match)
    for seat in match.hand.seats:
        if seat == viewer or (viewer == match.sitter and seat == match.captain):
            continue
        hidden |= holding(match, seat)
    return hidden


@pytest.mark.slow
@pytest.mark.parametrize(("variant", "seed"), [("classic", 31), ("box", 31)])
def test_no_response_reveals_a_hidden_card(redis_app, client, variant, seed):
    table = Table.open(redis_app, client, variant, seed=seed)
    viewers = [None, *range(len(table.tokens))]
    shown_to_all: set[str] = set()
    hand_number = 0
    checks = 0
    while True:
        match = table.match()
        if match.hand is None or match.hand.number > HANDS_CHECKED:
            break
        if match.hand.number != hand_number:
            hand_number, shown_to_all = match.hand.number, set()
        public_hand = table.view()["hand"]
        shown_to_all |= set(public_hand["discard_pile"])
        if "knock" in public_hand:
            shown_to_all |= cards_in(public_hand["knock"])
        for viewer in viewers:
            leaked = seen_by(table, viewer, hand_number) & (unknown_to(match, viewer) - shown_to_all)
            assert not leaked, f"seat {viewer} sees {sorted(leaked)} in hand {hand_number}"
            checks += 1
        acted = play_one(table, explicit=hand_number % 2 == 0)
        assert acted.status_code == 200
        # The actor's own answer is a view too.
        actor = acted.get_json()["you"]["seat"]
        after = table.match()
        if after.hand is not None and after.hand.number == hand_number:
            leaked = cards_in(current_part(acted.get_json())) & (unknown_to(after, actor) - shown_to_all)
            assert not leaked, f"seat {actor}'s answer shows {sorted(leaked)}"
    assert checks > 100


def test_each_player_sees_exactly_their_own_hand(redis_app, client):
    table = Table.open(redis_app, client, "box", seed=31)
    match = table.match()
    for seat in range(3):
        you = table.view(seat)["you"]
        assert set(you["hand"]) == holding(match, seat)
        if seat == match.sitter:
            assert set(you["partner"]["hand"]) == holding(match, match.captain)
        else:
            assert "partner" not in you
    assert "you" not in table.view()


def test_last_hand_shows_both_hands_once_the_hand_is_over(redis_app, client):
    table = Table.open(redis_app, client, "classic", seed=31)
    while table.view()["last_hand"] is None:
        before = table.match()
        assert play_one(table).status_code == 200
    last = table.view(0)["last_hand"]
    assert {int(seat) for seat in last["hands"]} == {0, 1}
    # The defender's hand as it was when the hand ended (after the knock's discard).
    assert set(last["hands"][str(last["defender"])]) == holding(before, last["defender"])
