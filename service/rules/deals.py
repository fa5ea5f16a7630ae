"""Fair decks: every deck of a match follows from its server seed, its client seed and a label
(docs/fairness.md, which a test checks against this module).

- **Labels.** ``cut:<attempt>`` for the cards cut for the seats (attempt 1, then 2... after equal
  ranks) and ``deal:<hand number>`` for each deal (1, 2... redeals included).
- **Bytes.** Block ``i`` (0, 1, 2...) is HMAC-SHA256 with key UTF-8(server seed) over the UTF-8
  text ``<client seed>:<label>:<i>`` (``i`` in decimal); the stream is block 0's 32 bytes, then
  block 1's, and so on.
- **Shuffle.** The deck starts in index order (Ac 2c ... Kc, Ad ... Kd, Ah ... Kh, As ... Ks) and
  is shuffled by Fisher-Yates: for ``i`` from 51 down to 1, ``j`` is drawn uniformly from 0..i
  and cards ``i`` and ``j`` swap places. To draw ``j``, with ``n = i + 1``: take the next byte
  ``b``; if ``b >= 256 - 256 % n`` throw it away and take the next one; else ``j = b % n``.

Why it is unbiased: an accepted byte is uniform over ``0 .. 256 - 256 % n - 1``, a range whose
length is a multiple of ``n``, so every residue ``b % n`` comes from the same number of byte
values (a bare ``b % n`` would favour the low residues whenever ``n`` does not divide 256).
Fisher-Yates with a uniform ``j`` at every step reaches each of the 52! orders in exactly one
way, so each is equally likely, as far as the bytes are uniform; HMAC-SHA256 under a key
nobody else knows cannot be told from uniform bytes.

The cards of a deck are then dealt by ``hand.deal`` (ten each, one at a time from the
non-dealer; the next card is the upcard; the rest is the stock, its first card drawn first)
and cut by the seats in seat order (seat 0 takes the deck's first card).

The **commitment** every view shows is the SHA-256 of the server seed's text: the seed stays
secret until the match is over, and then anyone can check it against what they were shown.
"""
from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator

from .cards import CARDS, Card

BYTE_VALUES = 256


def commitment(server_seed: str) -> str:
    """The lowercase hex SHA-256 of the UTF-8 text of ``server_seed``."""
    return hashlib.sha256(server_seed.encode()).hexdigest()


def cut_label(attempt: int) -> str:
    """The label of the ``attempt``-th cut of a match (from 1)."""
    return f"cut:{attempt}"


def deal_label(number: int) -> str:
    """The label of the deal of hand ``number`` (from 1, redeals included)."""
    return f"deal:{number}"


def byte_stream(server_seed: str, client_seed: str, label: str) -> Iterator[int]:
    """The endless bytes a shuffle of ``label`` draws from (see the module docstring)."""
    key = server_seed.encode()
    block = 0
    while True:
        yield from hmac.new(key, f"{client_seed}:{label}:{block}".encode(), hashlib.sha256).digest()
        block += 1


def uniform_below(n: int, stream: Iterator[int]) -> int:
    """A number drawn uniformly from 0..n-1 (1 <= n <= 256), by rejection sampling on ``stream``."""
    limit = BYTE_VALUES - BYTE_VALUES % n
    for byte in stream:
        if byte < limit:
            return byte % n
    raise ValueError("the byte stream ended")  # the HMAC stream never does


def derive_deck(server_seed: str, client_seed: str, label: str) -> list[Card]:
    """The deck of ``label`` in a match with these seeds: the first card dealt first."""
    deck = list(CARDS)
    stream = byte_stream(server_seed, client_seed, label)
    for i in range(len(deck) - 1, 0, -1):
        j = uniform_below(i + 1, stream)
        deck[i], deck[j] = deck[j], deck[i]
    return deck
