"""Seeded random playouts: 2,000 complete matches of each variant, invariants after every step."""
import pytest

from service.rules import decode, encode

from .playout import play_match

MATCHES_PER_VARIANT = 2000
CHUNK = 100


@pytest.mark.parametrize("variant", ["classic", "box"])
@pytest.mark.parametrize("first_seed", range(0, MATCHES_PER_VARIANT, CHUNK))
def test_random_matches_keep_every_invariant_and_end(variant, first_seed):
    for seed in range(first_seed, first_seed + CHUNK):
        match, events, results, refused = play_match(variant, seed)
        assert refused > 0
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        expected = [0] * match.seat_count
        for result in results:
            if result["winner"] is not None:
                expected[result["winner"]] += result["points"]
        assert list(match.scores) == expected
        assert sum(1 for r in results if r["winner"] is not None) == sum(match.hands_won)
        assert max(match.scores) >= match.rules.target_score
        assert match.result.as_dict()["winner"] == match.scores.index(max(match.scores))
        assert decode(encode(match)) == match
