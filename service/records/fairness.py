"""What the record of a finished match reveals of its fair shuffles (docs/fairness.md).

Until the match is over its server seed stays in the stored match: views show only its
commitment (``service.rules.deals.commitment``), and no event, webhook, log line or error shows
more. The record reveals the seed, so that anyone can check it against the commitment they were
shown and re-derive every deck.
"""
from __future__ import annotations

from service import rules
from service.rules.deals import commitment


def revealed_fairness(match: rules.Match) -> dict | None:
    """The seeds of ``match`` and the commitment (None for a match dealt before fair shuffles)."""
    if match.server_seed is None:
        return None
    return {"server_seed": match.server_seed, "commitment": commitment(match.server_seed),
            "client_seed": match.client_seed}
