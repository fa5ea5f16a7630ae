"""Ratings: Glicko-2 per API key, variant and player, and the bot levels on the same scale
(docs/ratings.md). ``glicko2``, ``outcomes`` and ``bots`` are pure: the standard library and
the engine's vocabulary only."""
