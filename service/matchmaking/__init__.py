"""Quick play: tickets, the pairing of a queue, bot fallback (docs/api.md, "Quick play").
``pairing`` is pure: the standard library and the ratings' values only."""
