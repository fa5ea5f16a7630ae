"""Commit and reveal: each match's secret server seed, the commitment every view shows, and
what a record says of them (docs/fairness.md). The decks themselves follow from the seeds in
the engine (``service.rules.deals``).

The server seed stays in the stored match until the match is over: no view, event, webhook,
log line or error shows it; the record of the finished match reveals it, and anyone can then
check that its SHA-256 is the commitment shown from the start, and re-derive every deck.
"""
from __future__ import annotations

import hashlib
import secrets

from service import rules

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


def commitment(server_seed: str) -> str:
    """The lowercase hex SHA-256 of the UTF-8 text of ``server_seed``."""
    return hashlib.sha256(server_seed.encode()).hexdigest()


def public_fairness(match: rules.Match) -> dict | None:
    """What every view shows of the match's fairness: the commitment and the client seed (null
    for a match dealt before fair shuffles)."""
    if match.server_seed is None:
        return None
    return {"commitment": commitment(match.server_seed), "client_seed": match.client_seed}


def revealed_fairness(match: rules.Match) -> dict | None:
    """What the record of a finished match says: the seeds and the commitment (null for a match
    dealt before fair shuffles)."""
    shown = public_fairness(match)
    return None if shown is None else {"server_seed": match.server_seed, **shown}
