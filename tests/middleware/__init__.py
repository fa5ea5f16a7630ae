"""Tests of the middleware: request deadlines, security headers (the rate limit and request ids are tested with observability, on its probe app)."""
