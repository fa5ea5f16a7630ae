"""Secrets of the service: the server secret, player tokens and API keys.

A player token is 16 random bytes and a 16-byte MAC of them and the game id under the server
secret, in url-safe base64. It is shown once; the service keeps only its SHA-256 and compares
hashes in constant time, so neither a stolen record nor response timing reveals a token. The
MAC lets the rate limiter tell a token issued for a game from an invented one without asking
Redis. Tokens a retried creation or a rematch must give again are derived, not random.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Iterable, Sequence

RANDOM_BYTES = 16
MAC_BYTES = 16
# A secret shorter than this is refused at start (the MACs and seeds would be guessable).
SECRET_MIN_LENGTH = 32


class ServerSecret:
    """The key of every MAC and derivation; the same in every process of a deployment."""

    def __init__(self, secret: str) -> None:
        self._key = secret.encode()

    def mac(self, *parts: str) -> bytes:
        """HMAC-SHA256 of ``parts`` (joined unambiguously)."""
        return hmac.new(self._key, "\x1f".join(parts).encode("utf-8", "surrogatepass"), hashlib.sha256).digest()

    def mixed_seed(self, seed: int) -> str:
        """What a client's seed becomes before it shuffles anything: without the secret, knowing
        the seed and seeing cards does not let anyone reproduce the deck."""
        return self.mac("seed", str(seed)).hex()[:32]

    def new_token(self, game_id: str) -> str:
        """A fresh token for a seat of ``game_id``."""
        return self._token(game_id, secrets.token_bytes(RANDOM_BYTES))

    def derived_token(self, game_id: str, *label: str) -> str:
        """The token that ``label`` names for ``game_id``: the same every time it is asked for."""
        return self._token(game_id, self.mac("token", game_id, *label)[:RANDOM_BYTES])

    def is_issued_for(self, token: str, game_id: str) -> bool:
        """Whether ``token`` was issued by this service for ``game_id`` (whether or not it was
        replaced since: only the stored hash says that)."""
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (binascii.Error, ValueError):
            return False
        if len(raw) != RANDOM_BYTES + MAC_BYTES:
            return False
        random_part, mac = raw[:RANDOM_BYTES], raw[RANDOM_BYTES:]
        return hmac.compare_digest(mac, self.mac("mac", game_id, random_part.hex())[:MAC_BYTES])

    def _token(self, game_id: str, random_part: bytes) -> str:
        mac = self.mac("mac", game_id, random_part.hex())[:MAC_BYTES]
        return base64.urlsafe_b64encode(random_part + mac).decode().rstrip("=")


def hash_token(token: str) -> str:
    """The SHA-256 (hex) under which a token is stored."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def seat_of(token_hash: str, seat_hashes: Sequence[str | None]) -> int | None:
    """The seat whose stored hash equals ``token_hash``, or None (a bot seat has no hash).

    Every seat is compared, so the time taken does not depend on which one matched.
    """
    found = None
    for seat, stored in enumerate(seat_hashes):
        if hmac.compare_digest(token_hash, stored or ""):
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


def key_id(api_key: str) -> str:
    """A short name for an API key that does not reveal it: what records and indexes store."""
    return hashlib.sha256(("api-key\x1f" + api_key).encode("utf-8", "surrogatepass")).hexdigest()[:32]
