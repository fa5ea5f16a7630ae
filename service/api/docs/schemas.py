"""Bodies of the documentation endpoints (described, not loaded)."""
from __future__ import annotations

OPENAPI_DOCUMENT = {
    "type": "object",
    "description": "This OpenAPI 3 document",
    "example": {"openapi": "3.0.3", "info": {"title": "Gin Rummy", "version": "1.0.0"}},
}
HTML_PAGE = {"type": "string", "description": "An HTML page", "example": "<!DOCTYPE html>..."}
