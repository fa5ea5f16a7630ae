"""The game's vocabulary as shared component schemas: one enum per engine enumeration, and the
free-form metadata object, each documented once and referenced by every field that uses it.

``enum_field`` and ``metadata``-style fields carry a ``component`` name in their metadata;
``openapi.DocumentConverter`` turns it into a reference. ``COMPONENTS`` is registered in the
document by ``register_api``.
"""
from __future__ import annotations

import marshmallow as ma

from service import rules
from service.api.fields import doc
from service.bots import Level
from service.records.analysis import GIN, KNOCK

VARIANT = "Variant"
MATCH_STATUS = "MatchStatus"
PHASE = "Phase"
ROLE = "Role"
OUTCOME = "Outcome"
DRAW_SOURCE = "DrawSource"
TURN_ACTION = "TurnAction"
BOT_LEVEL = "BotLevel"
METADATA = "Metadata"
MISSED_CHANCE = "MissedChance"

ENUMS: dict[str, tuple[tuple[str, ...], str]] = {
    VARIANT: (tuple(rules.VARIANTS), "`classic` (2 players) or `box` (3 players, \"in the box\")"),
    MATCH_STATUS: (tuple(s.value for s in rules.Status),
                   "`active` (being played), `finished` (played out or resigned) or `aborted`"),
    PHASE: (tuple(p.value for p in rules.Phase), "What happens next in a hand"),
    ROLE: (tuple(r.value for r in rules.Role), "`dealer`/`player` in classic; `box`/`captain`/`sitter` in box"),
    OUTCOME: (tuple(o.value for o in rules.Outcome), "How a hand ended"),
    DRAW_SOURCE: (tuple(s.value for s in rules.DrawSource),
                  "`stock`, or `discard` (the discard pile; during the upcard offer, the upcard)"),
    TURN_ACTION: (tuple(a.value for a in rules.TURN_ACTIONS), "An action of a seat's turn"),
    BOT_LEVEL: (tuple(level.value for level in Level), "How well a bot plays"),
    MISSED_CHANCE: ((GIN, KNOCK), "What a person let pass at a discard: a gin, or else a knock, that was open"),
}
METADATA_MAX_BYTES = 1024
# What the stored record's serialiser (orjson) writes: signed 64-bit integers, and nesting to a
# depth that the record's own levels leave room for. Anything else would fail at the save.
METADATA_INTEGERS = (-2**63, 2**63 - 1)
METADATA_MAX_DEPTH = 32

COMPONENTS: dict[str, dict] = {
    **{name: {"type": "string", "enum": list(values), "description": description, "example": values[0]}
       for name, (values, description) in ENUMS.items()},
    METADATA: {
        "type": "object",
        "additionalProperties": True,
        "description": f"The integrator's own data: a JSON object of at most {METADATA_MAX_BYTES} bytes as "
                       f"compact JSON in UTF-8, objects and arrays nested at most {METADATA_MAX_DEPTH} deep, "
                       "integers within 64 bits (-2^63 to 2^63-1), returned as it was sent and never "
                       "interpreted (e.g. `{\"tournament\": \"spring\"}`)",
    },
}


def enum_field(component: str, description: str, example: str, **kwargs) -> ma.fields.String:
    """A string field taking the values of the enum ``component``, documented as a reference to it."""
    values = ENUMS[component][0]
    return ma.fields.String(validate=ma.validate.OneOf(values),
                            metadata={**doc(description, example), "component": component}, **kwargs)
