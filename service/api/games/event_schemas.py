"""The events' schemas, derived from the engine's registry (``rules.EVENT_TYPES``): one schema
per event type; ``KnownEvent``, a ``oneOf`` of them with a discriminator on ``type``; and
``Event``, either a known event or ``OtherEvent``.

Each schema holds the fields every event has (``seq``, ``type``, ``seat``, ``hand``, ``turn``,
``bot``), then its type's public fields (always present; a field that is also secret is null
for the viewers who may not see it), then its secret-only fields (present only for the seats
that may see them). ``type`` is a one-value enum per schema, so exactly one schema of the
``oneOf`` accepts an event, and a client that tries the schemas in turn picks the right one.
``OtherEvent`` accepts only types not listed, so that such a client parses an event of a type
added later instead of failing on the page that holds it. It stands outside the discriminated
union: there, a generator would give it the discriminator value its name implies (TypeScript
typed its ``type`` as the literal ``"OtherEvent"``), where a later type is any other string.
"""
from __future__ import annotations

from service.api.fields import CARD_PATTERN
from service.api.openapi import NULL_ONLY, schema_ref
from service.api.vocabulary import DRAW_SOURCE, MATCH_STATUS, OUTCOME, ROLE
from service.rules import EVENT_TYPES, EventType
from service.rules.events import EventSpec, Field, Kind

EVENT = "Event"
KNOWN_EVENT = "KnownEvent"
OTHER_EVENT = "OtherEvent"
LAYOFF_ITEM = "LayoffItem"
SUGGESTED_ACTION = "SuggestedAction"
RESULT_PLAYER = "ResultPlayer"
SEAT_MAX = 2

_CARD = {"type": "string", "pattern": CARD_PATTERN}
_CARDS = {"type": "array", "items": _CARD}
# How each kind of field is written; a kind the registry marks "or null" is nullable.
KIND_SCHEMAS: dict[Kind, dict] = {
    Kind.INT: {"type": "integer"},
    Kind.SEAT: {"type": "integer", "minimum": 0, "maximum": SEAT_MAX, "nullable": True},
    Kind.BOOL: {"type": "boolean"},
    Kind.TEXT: {"type": "string"},
    Kind.TIME: {"type": "string", "format": "date-time"},
    Kind.STATUS: {"allOf": [schema_ref(MATCH_STATUS)]},
    Kind.CARD: {**_CARD, "nullable": True},
    Kind.CARDS: _CARDS,
    Kind.MELDS: {"type": "array", "items": _CARDS},
    Kind.LAYOFFS: {"type": "array", "items": schema_ref(LAYOFF_ITEM)},
    Kind.ROLES: {"type": "array", "items": schema_ref(ROLE)},
    Kind.ACTION: {"anyOf": [schema_ref(SUGGESTED_ACTION), NULL_ONLY]},
    Kind.OUTCOME: {"allOf": [schema_ref(OUTCOME)]},
    Kind.SOURCE: {"allOf": [schema_ref(DRAW_SOURCE)]},
    Kind.HANDS: {"type": "object", "additionalProperties": _CARDS},
    Kind.RESULTS: {"type": "array", "items": schema_ref(RESULT_PLAYER)},
}
_SEAT_OR_NULL = KIND_SCHEMAS[Kind.SEAT]
COMMON = {
    "seq": {"type": "integer", "minimum": 1, "description": "Sequence number, from 1", "example": 13},
    "seat": {**_SEAT_OR_NULL, "description": "The seat that acted (null: nobody in particular)", "example": 1},
    "hand": {"type": "integer", "nullable": True, "description": "Number of the hand (null before the first deal)",
             "example": 4},
    "turn": {**_SEAT_OR_NULL, "description": "The seat to act once this change was complete (null: nobody, the "
                                             "match is over)", "example": 0},
    "bot": {"type": "boolean", "description": "Whether the computer chose this (a bot, or a move played when a "
                                              "person's deadline passed)", "example": False},
}


def schema_name(kind: EventType) -> str:
    """``draw`` -> ``DrawEvent``, ``hand_scored`` -> ``HandScoredEvent``."""
    return "".join(part.capitalize() for part in kind.value.split("_")) + "Event"


def _property(field: Field) -> dict:
    schema = {**KIND_SCHEMAS[field.kind], "description": field.description, "example": field.example}
    if field.nullable and "allOf" in schema:  # a reference: OpenAPI 3.0 needs the null spelled out
        schema["anyOf"] = [*schema.pop("allOf"), NULL_ONLY]
    elif field.nullable and "anyOf" not in schema:
        schema["nullable"] = True
    return schema


def event_schema(spec: EventSpec) -> dict:
    """The schema of one event type."""
    public = {field.name: _property(field) for field in spec.public}
    secret_only = {field.name: {**_property(field),
                                "description": f"{field.description} (only for the seats that may see it)"}
                   for field in spec.secret if field.name not in public and not field.hidden}
    kind = spec.type.value
    properties = {
        "seq": COMMON["seq"],
        "type": {"type": "string", "enum": [kind], "description": "What happened", "example": kind},
        **{name: COMMON[name] for name in ("seat", "hand", "turn", "bot")},
        **public,
        **secret_only,
    }
    return {
        "type": "object",
        "description": spec.description,
        "properties": properties,
        "required": ["seq", "type", "seat", "hand", "turn", "bot", *public],
    }


def other_event_schema() -> dict:
    """The schema of an event whose type this version of the document does not list."""
    return {
        "type": "object",
        "description": "An event of a type added after this version of the API: skip it",
        "properties": {
            "seq": COMMON["seq"],
            "type": {"type": "string", "not": {"enum": [kind.value for kind in EVENT_TYPES]},
                     "description": "What happened, named by a later version", "example": "a_later_type"},
            **{name: COMMON[name] for name in ("seat", "hand", "turn", "bot")},
        },
        "required": ["seq", "type"],
    }


def event_components() -> dict[str, dict]:
    """Every event type's schema, KnownEvent (the union of them), OtherEvent, and ``Event``."""
    components = {schema_name(kind): event_schema(spec) for kind, spec in EVENT_TYPES.items()}
    components[KNOWN_EVENT] = {
        "description": "An event of a type this version of the API lists, with the fields of its `type`",
        "oneOf": [schema_ref(schema_name(kind)) for kind in EVENT_TYPES],
        "discriminator": {
            "propertyName": "type",
            "mapping": {kind.value: schema_ref(schema_name(kind))["$ref"] for kind in EVENT_TYPES},
        },
    }
    components[OTHER_EVENT] = other_event_schema()
    components[EVENT] = {
        "description": "One thing that happened, with the fields of its `type` (redacted for the viewer). "
                       "New types may be added: clients should skip events of a `type` they do not know "
                       "(`OtherEvent`).",
        "oneOf": [schema_ref(KNOWN_EVENT), schema_ref(OTHER_EVENT)],
    }
    return components
