"""docs/fairness.md, "The algorithm": the decks of a fair shuffle, from the seeds alone."""
from __future__ import annotations

import hashlib
import hmac
from itertools import islice

import pytest

from service.rules import CARDS, decode, encode, new_match, rules_for
from service.rules.deals import BYTE_VALUES, byte_stream, cut_label, deal_label, derive_deck, uniform_below
from service.rules.events import Event, EventType, decode_event, encode_event

SERVER = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"


def test_the_byte_stream_is_the_hmac_blocks_one_after_another():
    blocks = b"".join(hmac.new(SERVER.encode(), f"seed:deal:1:{i}".encode(), hashlib.sha256).digest() for i in range(3))
    assert bytes(islice(byte_stream(SERVER, "seed", "deal:1"), 96)) == blocks


@pytest.mark.parametrize("n", range(1, 53))
def test_each_draw_is_uniform_over_the_bytes_it_accepts(n):
    # Every byte value once: the accepted ones give each of 0..n-1 equally often.
    counts = [0] * n
    accepted = 0
    for byte in range(BYTE_VALUES):
        stream = iter([byte, 0])
        value = uniform_below(n, stream)
        if next(stream, None) is not None:  # the byte was accepted: the 0 behind it is still there
            counts[value] += 1
            accepted += 1
    assert accepted == BYTE_VALUES - BYTE_VALUES % n and len(set(counts)) == 1


def test_a_rejected_byte_is_skipped():
    assert uniform_below(52, iter([208, 255, 209, 53])) == 1  # 208 and above are refused for 52


def test_a_deck_is_every_card_once_the_same_every_time_and_another_for_any_other_input():
    deck = derive_deck(SERVER, "seed", deal_label(1))
    assert sorted(deck, key=lambda c: c.index) == list(CARDS)
    assert derive_deck(SERVER, "seed", deal_label(1)) == deck
    others = [derive_deck(SERVER, "seed", deal_label(2)), derive_deck(SERVER, "seed", cut_label(1)),
              derive_deck(SERVER, "seed!", deal_label(1)), derive_deck(SERVER[:-1] + "1", "seed", deal_label(1)),
              derive_deck(SERVER, "", deal_label(1)), derive_deck(SERVER, "ünïcödé 🂡", deal_label(1))]
    assert all(other != deck for other in others)


def test_a_match_with_seeds_deals_every_deck_from_them():
    rules = rules_for("classic", {"target_score": 1})
    match, events = new_match("classic", ["a", "b"], rules, server_seed=SERVER, client_seed="seed")
    cuts = [e for e in events if e.type is EventType.CUT]
    for n, cut in enumerate(cuts, start=1):
        assert cut.public["cards"] == [str(c) for c in derive_deck(SERVER, "seed", cut_label(n))[:2]]
    deal = next(e for e in events if e.type is EventType.DEAL)
    assert deal.secret["deck"] == [str(c) for c in derive_deck(SERVER, "seed", deal_label(1))]
    assert (match.server_seed, match.client_seed) == (SERVER, "seed")
    assert decode(encode(match)) == match


def test_a_stored_match_of_the_earlier_format_has_no_server_seed():
    match, _ = new_match("classic", ["a", "b"], rules_for("classic"), seed=4)
    stored = encode(match)
    older = {key: value for key, value in stored.items() if key not in ("ss", "cs")} | {"fmt": 2}
    assert decode(older) == match and decode(older).server_seed is None
    assert decode(older).deck(deal_label(2)) == match.deck(deal_label(2))  # dealt as before


def test_an_event_keeps_its_time_and_events_stored_without_one_still_read():
    event = Event(7, EventType.DISCARD, 1, 2, {"card": "Kd"}, turn=0)
    timed = Event(7, EventType.DISCARD, 1, 2, {"card": "Kd"}, turn=0, elapsed_ms=12_345)
    assert decode_event(encode_event(timed)) == timed
    assert decode_event(encode_event(event)) == event and decode_event(encode_event(event)).elapsed_ms is None
    assert encode_event(timed) == encode_event(event) + "\x1f12345"
