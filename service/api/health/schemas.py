"""Bodies of the health endpoints."""
from __future__ import annotations

import marshmallow as ma

from service.api.fields import doc


class StatusSchema(ma.Schema):
    status = ma.fields.String(required=True, metadata=doc("`ok`", "ok"))
