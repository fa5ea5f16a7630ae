"""The seeds of a new match's fair shuffles (docs/fairness.md): a secret server seed per match,
and the bounds of the creator's client seed."""
from __future__ import annotations

import hashlib
import secrets

SERVER_SEED_BYTES = 32
CLIENT_SEED_MAX = 64


def new_server_seed(mixed_seed: str | None) -> str:
    """A fresh server seed: 32 random bytes in lowercase hex; for a seeded (test) match, derived
    from its mixed seed instead, so that the match replays. The derivation is one-way: the
    revealed server seed tells nothing of the mixed seed, which also picks a rematch's seed
    and the bots' random choices."""
    if mixed_seed is None:
        return secrets.token_hex(SERVER_SEED_BYTES)
    return hashlib.sha256(f"server-seed:{mixed_seed}".encode()).hexdigest()
