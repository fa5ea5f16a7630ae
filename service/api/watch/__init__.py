"""GET /watch/{id}: the service's own page for watching a match live (its public table)."""
