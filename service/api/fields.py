"""Field helpers shared by the resource schemas: documentation metadata and strict types.

Every field of every schema carries a description and an example, because the OpenAPI
document is what clients read first.
"""
from __future__ import annotations

import marshmallow as ma

from service.rules import CARDS, InvalidInput, parse_card

CARD_PATTERN = r"^[A2-9TJQK][cdhs]$"
# A bad card is named in the error; longer text is cut so a hostile value is not echoed.
NAMED_VALUE_MAX = 20
EXAMPLE_HAND = ["As", "2s", "3s", "7d", "7c", "7h", "Td", "Jd", "Qd", "4c"]


def doc(description: str, example: object) -> dict:
    """The field metadata apispec turns into ``description`` and ``example``."""
    return {"description": description, "example": example}


# Text without control characters (C0, C1) or line and paragraph separators. Checked with a
# pattern, not str.isprintable(), so that the OpenAPI document states exactly what passes.
# No control characters, line separators, bidirectional overrides or lone surrogates: names
# and advice are shown to other players, where such characters disguise or break the text.
# U+200D (zero-width joiner) stays allowed: emoji sequences need it.
PRINTABLE_PATTERN = r"^[^\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]+$"
# Header values: visible ASCII and space.
HEADER_TEXT_PATTERN = r"^[\u0020-\u007e]+$"


def text_field(description: str, example: str, max_length: int, pattern: str = PRINTABLE_PATTERN, **kwargs) -> ma.fields.String:
    """A string of 1 to ``max_length`` characters matching ``pattern`` (documented as such)."""
    return ma.fields.String(
        validate=[
            ma.validate.Length(1, max_length),
            ma.validate.Regexp(pattern, error="Must contain printable characters only."),
        ],
        metadata=doc(description, example),
        **kwargs,
    )


class StrictBoolean(ma.fields.Boolean):
    """JSON ``true`` or ``false`` only (marshmallow's Boolean also takes 1, "yes"...)."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return value


class CardField(ma.fields.String):
    """A card in RULES.md notation, loaded as the engine's ``Card``.

    Any failure of this field is reported with code ``invalid_card`` (see problems.py).
    """

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str) or len(value) > NAMED_VALUE_MAX:
            shown = repr(value)
            if len(shown) > NAMED_VALUE_MAX:
                shown = shown[:NAMED_VALUE_MAX] + "…"
            raise ma.ValidationError(f"{shown} is not a card: write rank (A23456789TJQK) then suit (cdhs), e.g. 'Th'")
        try:
            return parse_card(value)
        except InvalidInput as error:
            raise ma.ValidationError(error.detail) from None


def card_field(description: str, example: str = "Th", **kwargs) -> CardField:
    return CardField(metadata={**doc(description, example), "pattern": CARD_PATTERN}, **kwargs)


def card_list(description: str, example: list[str], unique: bool = False, **kwargs) -> ma.fields.List:
    """A list of cards (at most a deck's worth unless ``validate`` says otherwise).

    ``unique`` documents that a card may not repeat (whoever parses the list checks it).
    """
    kwargs.setdefault("validate", ma.validate.Length(max=len(CARDS)))
    metadata = {**doc(description, example), **({"uniqueItems": True} if unique else {})}
    return ma.fields.List(card_field("A card", example[0]), metadata=metadata, **kwargs)


def melds_field(description: str, example: list[list[str]], **kwargs) -> ma.fields.List:
    """A list of melds, each a list of cards."""
    return ma.fields.List(
        card_list("One meld: a set or a run", example[0]),
        validate=ma.validate.Length(max=len(CARDS)),
        metadata=doc(description, example),
        **kwargs,
    )


def field_at(schema: ma.Schema, path: list[str]) -> ma.fields.Field | None:
    """The field of ``schema`` that a dotted error path (``melds.0.1``) points at, if any."""
    field: ma.fields.Field | ma.Schema | None = schema
    for part in path:
        if isinstance(field, ma.fields.Nested):
            field = field.schema
        if isinstance(field, ma.Schema):
            field = next((f for f in field.load_fields.values() if (f.data_key or f.name) == part), None)
        elif isinstance(field, ma.fields.List) and part.isdigit():
            field = field.inner
        else:
            return None
    return field if isinstance(field, ma.fields.Field) else None


def example_of(schema: type[ma.Schema]) -> dict:
    """An example object of ``schema``, made of its fields' examples."""
    return {
        field.data_key or name: field.metadata["example"]
        for name, field in schema().fields.items()
        if "example" in field.metadata
    }


def nested(schema: type[ma.Schema], description: str, **kwargs) -> ma.fields.Nested:
    """A nested object, documented with an example built from its fields'."""
    return ma.fields.Nested(schema, metadata=doc(description, example_of(schema)), **kwargs)


def nested_list(schema: type[ma.Schema], description: str, **kwargs) -> ma.fields.List:
    """A list of nested objects, documented with a one-item example."""
    return ma.fields.List(ma.fields.Nested(schema), metadata=doc(description, [example_of(schema)]), **kwargs)
