"""/docs and /openapi.json."""
