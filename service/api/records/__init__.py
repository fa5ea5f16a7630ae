"""/v1/games/{game_id}/record, /replay and /analysis: a match once it is over."""
