"""The engine's solver (service/rules/melds.py) is exact: it agrees with the brute-force
reference (tests/rules/reference.py) on random and meld-heavy hands, and what it returns is a
legal arrangement that adds up to the deadwood it reports."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.rules.cards import Card, mask_of, parse_cards
from service.rules.errors import IllegalMove
from service.rules.melds import analyze_hand, arrange_with_discard, best_layoff, check_layoffs, is_run
from tests.rules import reference as ref

EXAMPLES = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAX_RUN = 6


def random_hands(size: int) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(ref.DECK), min_size=size, max_size=size, unique=True)


@st.composite
def runs(draw) -> list[str]:
    """A run of 3 to 6 cards anywhere in one suit (ace low)."""
    suit, length = draw(st.sampled_from(ref.SUITS)), draw(st.integers(3, MAX_RUN))
    low = draw(st.integers(0, len(ref.RANKS) - length))
    return [ref.RANKS[r] + suit for r in range(low, low + length)]


@st.composite
def sets(draw) -> list[str]:
    """Three or four cards of one rank."""
    rank = draw(st.sampled_from(ref.RANKS))
    return [rank + suit for suit in draw(st.lists(st.sampled_from(ref.SUITS), min_size=3, max_size=4, unique=True))]


@st.composite
def hand_with(draw, size: int, core: list[str], excluded: frozenset[str] = frozenset()) -> list[str]:
    """``size`` cards: the first ones of ``core`` (duplicates dropped), then random noise not in ``excluded``."""
    cards = list(dict.fromkeys(core))[:size]
    rest = [c for c in ref.DECK if c not in cards and c not in excluded]
    missing = size - len(cards)
    return cards + draw(st.lists(st.sampled_from(rest), min_size=missing, max_size=missing, unique=True))


def built_hands(size: int) -> st.SearchStrategy[list[str]]:
    """A few runs and sets, overlapping or not (so sets and runs compete for cards), plus noise."""
    groups = st.lists(st.one_of(runs(), sets()), min_size=1, max_size=4)
    return groups.flatmap(lambda gs: hand_with(size, [c for g in gs for c in g]))


@st.composite
def block_hands(draw, size: int) -> list[str]:
    """``size`` cards of 3 or 4 consecutive ranks in all suits, like '4c 4d 4h 4s 5c 5d 5h 5s 6c 6d 6h'."""
    width = draw(st.integers(3, 4))
    low = draw(st.integers(0, len(ref.RANKS) - width))
    block = [ref.RANKS[r] + s for r in range(low, low + width) for s in ref.SUITS]
    return list(draw(st.permutations(block))[:size])


def meld_heavy_hands(size: int) -> st.SearchStrategy[list[str]]:
    return st.one_of(built_hands(size), block_hands(size))


HANDS = {"random": random_hands, "meld_heavy": meld_heavy_hands}


def texts(cards) -> set[str]:
    return {str(c) for c in cards}


def assert_valid_melds(melds, hand: set[str]) -> set[str]:
    """Each group is a meld, no card is in two, all are in ``hand``; returns the melded cards."""
    groups = [texts(meld) for meld in melds]
    assert all(ref.is_meld(group) for group in groups), melds
    melded = set().union(*groups)
    assert sum(map(len, groups)) == len(melded), f"melds overlap: {melds}"
    assert melded <= hand
    return melded


def assert_valid_arrangement(result, hand: set[str]) -> None:
    """Valid melds within ``hand``; the deadwood cards are the rest and the deadwood their value."""
    melded = assert_valid_melds(result.melds, hand)
    dead = texts(result.deadwood_cards)
    assert len(dead) == len(result.deadwood_cards) and dead == hand - melded
    assert result.deadwood == ref.points(dead)


@pytest.mark.parametrize("kind", HANDS)
@EXAMPLES
@given(data=st.data())
def test_ten_card_min_deadwood_is_exact(kind, data):
    cards = data.draw(HANDS[kind](10), label="hand")
    result = analyze_hand(cards)
    assert result.best_discard is None
    assert_valid_arrangement(result, set(cards))
    assert result.deadwood == ref.min_deadwood(cards)
    assert result.gin == (result.deadwood == 0)
    assert result.can_knock == (result.deadwood <= 10)


@pytest.mark.parametrize("kind", HANDS)
@EXAMPLES
@given(data=st.data())
def test_eleven_card_best_discard_is_exact(kind, data):
    cards = data.draw(HANDS[kind](11), label="hand")
    result = analyze_hand(cards, knock_limit=7)
    least, best_discards = ref.best_discard(cards)
    assert str(result.best_discard) in best_discards
    assert_valid_arrangement(result, set(cards) - {str(result.best_discard)})
    assert result.deadwood == least
    assert result.can_knock == (least <= 7)


@EXAMPLES
@given(data=st.data())
def test_best_discard_never_picks_the_forbidden_card(data):
    cards = data.draw(st.one_of(random_hands(11), meld_heavy_hands(11)), label="hand")
    forbidden = data.draw(st.sampled_from(cards), label="forbidden")
    result = arrange_with_discard(mask_of(parse_cards(cards)), Card.parse(forbidden).index)
    least, best_discards = ref.best_discard(cards, forbidden)
    assert str(result.best_discard) in best_discards
    assert_valid_arrangement(result, set(cards) - {str(result.best_discard)})
    assert result.deadwood == least


# --- Lay-offs ------------------------------------------------------------------------------------

@st.composite
def extensions(draw, meld: frozenset[str]) -> list[str]:
    """Cards that extend a meld: a set's missing suit(s), or a chain of up to three cards going
    outward from either or both ends of a run (at least one card whenever the meld can grow)."""
    first = next(iter(meld))
    if ref.is_set(meld):
        missing = [first[0] + s for s in ref.SUITS if first[0] + s not in meld]
        return draw(st.lists(st.sampled_from(missing), min_size=1, unique=True)) if missing else []
    ranks = sorted(ref.rank_index(c) for c in meld)
    room_up = min(3, len(ref.RANKS) - 1 - ranks[-1])
    down = draw(st.integers(0 if room_up else 1, min(3, ranks[0])))
    up = draw(st.integers(0 if down else 1, room_up))
    return [ref.RANKS[r] + first[1] for r in [*range(ranks[0] - down, ranks[0]), *range(ranks[-1] + 1, ranks[-1] + 1 + up)]]


def neighbours(card: str) -> list[str]:
    """Cards that can meld with ``card`` in the defender's own hand, competing with laying it off."""
    rank = ref.rank_index(card)
    same_rank = [card[0] + s for s in ref.SUITS]
    same_suit = [ref.RANKS[r] + card[1] for r in (rank - 2, rank - 1, rank + 1, rank + 2) if 0 <= r < len(ref.RANKS)]
    return same_rank + same_suit


@st.composite
def random_table(draw):
    """Knocker's melds from a real random hand's best arrangement; the defender holds 10 other cards."""
    deck = draw(st.permutations(ref.DECK))
    return analyze_hand(deck[:10]).melds, list(deck[10:20])


@st.composite
def meld_heavy_table(draw):
    """Knocker's melds: any arrangement of a meld-heavy hand (a 3-of-4 set, a split run ...);
    the defender holds cards that extend them at both ends or as a set's 4th card, cards that
    could meld with those instead, and noise."""
    knocker = draw(meld_heavy_hands(10))
    arrangements = [c for c in ref.disjoint_collections(knocker) if c]
    melds = draw(st.sampled_from(arrangements)) if arrangements else ()
    chosen = [c for m in melds for c in draw(extensions(m)) if c not in knocker]
    tempting = [c for c in dict.fromkeys(n for c in chosen for n in neighbours(c)) if c not in knocker and c not in chosen]
    core = chosen + draw(st.lists(st.sampled_from(tempting), max_size=4, unique=True) if tempting else st.just([]))
    defender = draw(hand_with(10, core, frozenset(knocker)))
    return tuple(tuple(parse_cards(sorted(m))) for m in melds), defender


def assert_valid_plan(plan, knocker_melds, defender: set[str]) -> None:
    """Own melds legal and within the hand, lay-offs legal in the given order, deadwood = the rest."""
    melded = assert_valid_melds(plan.melds, defender)
    available = mask_of(parse_cards(sorted(defender - melded)))
    laid_mask = check_layoffs(knocker_melds, available, mask_of(parse_cards(sorted(defender))), plan.layoffs)
    laid = texts(card for card, _ in plan.layoffs)
    assert mask_of(parse_cards(sorted(laid))) == laid_mask
    dead = texts(plan.deadwood_cards)
    assert len(dead) == len(plan.deadwood_cards) and dead == defender - melded - laid
    assert plan.deadwood == ref.points(dead)


@pytest.mark.parametrize("table", [random_table, meld_heavy_table], ids=["random", "meld_heavy"])
@EXAMPLES
@given(data=st.data())
def test_best_layoff_is_exact_and_legal(table, data):
    knocker_melds, defender = data.draw(table(), label="knocker melds, defender")
    plan = best_layoff(knocker_melds, defender)
    assert_valid_plan(plan, knocker_melds, set(defender))
    assert plan.deadwood == ref.best_layoff_deadwood(knocker_melds, defender)


# --- Explicit examples -----------------------------------------------------------------------------

def test_three_runs_and_a_loose_card_is_gin_after_discarding_it():
    result = analyze_hand("2s 3s 4s 5s 3c 4c 5c 2d 3d 4d 5h".split())
    assert (result.deadwood, str(result.best_discard), result.gin) == (0, "5h", True)
    assert sorted(map(texts, result.melds), key=sorted) == [{"2d", "3d", "4d"}, {"2s", "3s", "4s", "5s"}, {"3c", "4c", "5c"}]


def test_two_full_sets_and_three_sixes_is_gin_after_discarding_a_four_or_five():
    cards = "4c 4d 4h 4s 5c 5d 5h 5s 6c 6d 6h".split()
    result = analyze_hand(cards)
    assert result.deadwood == 0 and result.best_discard is not None
    assert str(result.best_discard)[0] in "45"
    assert_valid_arrangement(result, set(cards) - {str(result.best_discard)})
    assert len(texts(c for m in result.melds for c in m)) == 10


def test_lay_offs_chain_seven_then_eight_onto_four_five_six():
    run = tuple(parse_cards(["4s", "5s", "6s"]))
    plan = best_layoff([run], ["8s", "7s", "Kd"])
    assert [(str(card), index) for card, index in plan.layoffs] == [("7s", 0), ("8s", 0)]
    assert (plan.deadwood, texts(plan.deadwood_cards)) == (10, {"Kd"})
    hand = mask_of(parse_cards(["8s", "7s", "Kd"]))
    seven, eight = Card.parse("7s"), Card.parse("8s")
    assert check_layoffs([run], hand, hand, [(seven, 0), (eight, 0)]) == seven.bit | eight.bit
    with pytest.raises(IllegalMove) as error:
        check_layoffs([run], hand, hand, [(eight, 0), (seven, 0)])
    assert error.value.code == "invalid_layoff"


def test_a_card_that_fits_a_set_and_a_run_goes_where_the_chain_needs_it():
    melds = [tuple(parse_cards(["7c", "7d", "7h"])), tuple(parse_cards(["4s", "5s", "6s"]))]
    plan = best_layoff(melds, ["7s", "8s", "Kd"])
    assert plan.deadwood == 10
    assert_valid_plan(plan, melds, {"7s", "8s", "Kd"})


def test_ace_is_low_only():
    assert is_run(parse_cards(["As", "2s", "3s"]))
    assert not is_run(parse_cards(["Qs", "Ks", "As"]))
    assert not is_run(parse_cards(["Ks", "As", "2s"]))
    assert analyze_hand("As 2s 3s 9c 9d Tc Jh 4d 7h 8h".split()).deadwood == 18 + 10 + 10 + 4 + 15
    assert analyze_hand("Qs Ks As 9c 9d Tc Jh 4d 7h 8h".split()).deadwood == 10 + 10 + 1 + 18 + 10 + 10 + 4 + 15
    assert analyze_hand("Ks As 2s 9c 9d Tc Jh 4d 7h 8h".split()).deadwood == 10 + 1 + 2 + 18 + 10 + 10 + 4 + 15


def test_no_lay_off_wraps_round_the_ace():
    low, high = tuple(parse_cards(["As", "2s", "3s"])), tuple(parse_cards(["Jh", "Qh", "Kh"]))
    plan = best_layoff([low, high], ["Ks", "Ah", "4s"])
    assert [(str(card), index) for card, index in plan.layoffs] == [("4s", 0)]
    assert plan.deadwood == 11
