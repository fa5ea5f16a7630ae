"""Bodies of the health endpoints."""
from __future__ import annotations

import marshmallow as ma

from service.api.fields import ResponseSchema, doc


class HealthSchema(ResponseSchema):
    status = ma.fields.String(required=True, metadata=doc("`ok`", "ok"))
