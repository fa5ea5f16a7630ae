"""/v1/games: matches."""
