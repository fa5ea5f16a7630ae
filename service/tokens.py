"""Secrets of the service: game ids, player tokens and API keys.

A player token is shown once, at creation; the service keeps only its SHA-256 and compares
hashes in constant time, so neither a stolen record nor response timing reveals a token.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Sequence

GAME_ID_PREFIX = "g_"
# 16 random bytes are 128 bits and exactly 22 url-safe base64 characters.
GAME_ID_BYTES = 16
GAME_ID_PATTERN = re.compile(r"g_[A-Za-z0-9_-]{22}")
# 32 random bytes: 256 bits, far beyond guessing.
TOKEN_BYTES = 32


def new_game_id() -> str:
    """A fresh, unguessable game id: ``g_`` and 22 url-safe characters."""
    return GAME_ID_PREFIX + secrets.token_urlsafe(GAME_ID_BYTES)


def is_game_id(text: str) -> bool:
    """Whether ``text`` has the shape of a game id (anything else cannot exist)."""
    return GAME_ID_PATTERN.fullmatch(text) is not None


def new_token() -> str:
    """A fresh player token."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str) -> str:
    """The SHA-256 (hex) under which a token is stored."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def seat_of(token_hash: str, seat_hashes: Sequence[str]) -> int | None:
    """The seat whose stored hash equals ``token_hash``, or None.

    Every seat is compared, so the time taken does not depend on which one matched.
    """
    found = None
    for seat, stored in enumerate(seat_hashes):
        if hmac.compare_digest(token_hash, stored):
            found = seat
    return found


def is_accepted_key(given: str | None, accepted: Iterable[str]) -> bool:
    """Whether ``given`` is one of the configured API keys (constant time per key)."""
    if given is None:
        return False
    given_bytes = given.encode("utf-8", "surrogatepass")
    matched = False
    for key in accepted:
        matched |= hmac.compare_digest(given_bytes, key.encode("utf-8", "surrogatepass"))
    return matched
