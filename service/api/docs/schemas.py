"""Bodies of the documentation endpoints (described, not loaded)."""
from __future__ import annotations

from service.api.openapi import API_TITLE, API_VERSION, OPENAPI_VERSION

OPENAPI_DOCUMENT = {
    "type": "object",
    "description": "This OpenAPI 3 document",
    "example": {"openapi": OPENAPI_VERSION, "info": {"title": API_TITLE, "version": API_VERSION}},
}
HTML_PAGE = {"type": "string", "description": "An HTML page", "example": "<!DOCTYPE html>..."}
