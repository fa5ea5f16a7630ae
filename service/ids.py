"""Game ids, and the shard each game belongs to.

Some writes must be atomic across a game and things shared by many games: the feed
(webhook deliveries among its entries), the timers (turn deadlines among them) and the player index. On Redis
Cluster one script can only touch keys of one hash slot, so those shared things are split into ``SHARDS`` shards,
each under the hash tag ``s<k>``, and every game id is drawn so that the id's own slot is the
slot of one shard tag. A game's keys (tag ``{<id>}``) and its shard's keys (tag ``{s<k>}``)
then live in the same slot, and one script updates both, on a single Redis or a cluster.

Drawing such an id costs no search: Redis' slot function is CRC16 (XMODEM), which is linear
over GF(2), so the CRC of ``prefix + suffix`` is the CRC of ``prefix + "\\0\\0"`` XOR the CRC
of ``suffix`` alone. A table of the CRCs of every two-character suffix turns "which suffix
puts this prefix into a shard's slot" into one dictionary lookup per shard.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets

SHARDS = 16
SLOT_COUNT = 16384
GAME_ID_PREFIX = "g_"
GAME_ID_PATTERN = re.compile(r"g_[A-Za-z0-9_-]{22}")
_ID_CHARS = re.compile(r"[A-Za-z0-9_-]+")
# 20 random characters (120 bits) and two chosen ones that place the id in a shard's slot.
_RANDOM_CHARS = 20
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def crc16(data: bytes, crc: int = 0) -> int:
    """CRC16-XMODEM of ``data``, continuing from ``crc``: Redis Cluster's key hash (the
    standard library's ``crc_hqx`` is that very CRC)."""
    return binascii.crc_hqx(data, crc)


def key_slot(key: str) -> int:
    """The Redis Cluster slot of ``key``, honouring a ``{hash tag}`` as Redis does."""
    start = key.find("{")
    if start >= 0:
        end = key.find("}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return crc16(key.encode()) % SLOT_COUNT


def shard_tag(shard: int) -> str:
    """The hash tag (without braces) of shard ``shard``'s keys."""
    return f"s{shard}"


SHARD_SLOTS: tuple[int, ...] = tuple(key_slot(shard_tag(k)) for k in range(SHARDS))
_SHARD_BY_SLOT = {slot: shard for shard, slot in enumerate(SHARD_SLOTS)}
_SLOT_MASK = SLOT_COUNT - 1
# The CRC of every two-character suffix on its own, keyed by its low 14 bits (the slot part).
_SUFFIX_BY_SLOT_BITS = {crc16(f"{a}{b}".encode()) & _SLOT_MASK: f"{a}{b}" for a in _ALPHABET for b in _ALPHABET}


def shard_of(game_id: str) -> int | None:
    """The shard of a game id drawn by this module; None for any other text."""
    return _SHARD_BY_SLOT.get(key_slot(game_id))


def is_game_id(text: str) -> bool:
    """Whether ``text`` is a well-formed game id of one of the shards (nothing else can exist)."""
    return is_placed_id(GAME_ID_PREFIX, text)


def is_placed_id(prefix: str, text: str) -> bool:
    """Whether ``text`` is an id that ``new_id(prefix)`` or ``derived_id(prefix, ...)`` could give."""
    return (len(text) == len(prefix) + _RANDOM_CHARS + 2 and text.startswith(prefix)
            and _ID_CHARS.fullmatch(text, len(prefix)) is not None and shard_of(text) is not None)


def new_game_id(shard: int | None = None) -> str:
    """A fresh, unguessable game id in ``shard`` (None: one chosen uniformly, so a cluster's load
    spreads)."""
    return new_id(GAME_ID_PREFIX, shard)


def derived_game_id(key: bytes, label: str, shard: int | None = None) -> str:
    """A game id that is a function of ``key`` and ``label`` (the same inputs, the same id):
    how a retried creation or a rematch finds the match that an earlier call made."""
    return derived_id(GAME_ID_PREFIX, key, label, shard)


def new_id(prefix: str, shard: int | None = None) -> str:
    """A fresh, unguessable id (``prefix`` and 22 characters) whose slot is ``shard``'s (None:
    a shard chosen uniformly)."""
    shard = secrets.randbelow(SHARDS) if shard is None else shard
    while True:
        found = _placed(prefix + secrets.token_urlsafe(15), (shard,))
        if found:
            return found


def derived_id(prefix: str, key: bytes, label: str, shard: int | None = None) -> str:
    """An id placed like ``new_id``'s that is a function of ``key``, ``label`` and ``shard``."""
    shards = range(SHARDS) if shard is None else (shard,)
    for attempt in range(1000):
        digest = hmac.new(key, f"{label}:{attempt}".encode(), hashlib.sha256).digest()
        found = _placed(prefix + base64.urlsafe_b64encode(digest[:15]).decode(), shards)
        if found:
            return found
    raise RuntimeError("no id found")  # (3/4)^16 per attempt in any shard, 3/4 in one: never in practice


def shard_of_name(name: str) -> int:
    """The shard of something named by a text that was not placed (a queue, an invite code)."""
    return crc16(name.encode("utf-8", "surrogatepass")) % SHARDS


def _placed(prefix: str, shards) -> str | None:
    """``prefix`` plus the two characters that put it into the first of ``shards`` they can."""
    assert len(prefix) == len(GAME_ID_PREFIX) + _RANDOM_CHARS  # every prefix is two characters long
    with_zeros = crc16(b"\0\0", crc16(prefix.encode())) & _SLOT_MASK
    for shard in shards:
        suffix = _SUFFIX_BY_SLOT_BITS.get(with_zeros ^ SHARD_SLOTS[shard])
        if suffix is not None:
            return prefix + suffix
    return None
