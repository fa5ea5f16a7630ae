"""/healthz and /readyz."""
