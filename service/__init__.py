"""Gin Rummy game service: a stateless REST API over a pure rules engine, with state in Redis."""
