"""Field helpers shared by the resource schemas: documentation metadata and strict types.

Every field of every schema carries a description and an example, because the OpenAPI
document is what clients read first.
"""
from __future__ import annotations

import marshmallow as ma

from service.api.text import RULE, ShownText
from service.rules import CARDS

CARD_PATTERN = r"^[A2-9TJQK][cdhs]$"
EXAMPLE_HAND = ["As", "2s", "3s", "7d", "7c", "7h", "Td", "Jd", "Qd", "4c"]


def doc(description: str, example: object) -> dict:
    """The field metadata apispec turns into ``description`` and ``example``."""
    return {"description": description, "example": example}


def utc_time(description: str, **kwargs) -> ma.fields.String:
    """A time as the service writes it, ISO 8601 UTC to the second, documented as ``date-time``
    so that generated clients read it as a time (events' times are documented the same way)."""
    return ma.fields.String(metadata={**doc(description, "2026-12-01T10:00:00Z"), "format": "date-time"}, **kwargs)


# Header values: visible ASCII, no space (a pattern every common regex engine reads alike).
# Proxies and clients may trim or fold spaces in a header, so a key with one might not come
# back byte for byte on a retry.
HEADER_TEXT_PATTERN = r"^[!-~]+$"


def shown_text(description: str, example: str, max_length: int, **kwargs) -> ShownText:
    """Text shown to other people: 1 to ``max_length`` characters under the rule of ``text.py``."""
    return ShownText(max_length, metadata=doc(f"{description} ({RULE})", example), **kwargs)


def header_text(description: str, example: str | None, max_length: int, **kwargs) -> ma.fields.String:
    """A header value of 1 to ``max_length`` visible ASCII characters (documented as such)."""
    metadata = {"description": description, **({} if example is None else {"example": example}),
                "pattern": HEADER_TEXT_PATTERN}
    return ma.fields.String(
        validate=[ma.validate.Length(1, max_length),
                  ma.validate.Regexp(HEADER_TEXT_PATTERN, error="Must be visible ASCII characters.")],
        metadata=metadata, **kwargs)


class StrictBoolean(ma.fields.Boolean):
    """JSON ``true`` or ``false`` only (marshmallow's Boolean also takes 1, "yes"...)."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return value


class CardField(ma.fields.Raw):
    """A card in the notation of docs/rules.md (``Th``). Documented as a string with a pattern;
    the engine parses it (``parse_action``), so a bad value is refused there with ``invalid_card``
    and the field named."""

    def deserialize(self, value, attr=None, data=None, **kwargs):
        # null too is a card that is not one: the engine refuses it, naming the field.
        return None if value is None else super().deserialize(value, attr, data, **kwargs)


def holds_cards(schema: ma.Schema | type[ma.Schema]) -> bool:
    """Whether a request read with ``schema`` may name a card (and so be refused with 422
    ``invalid_card``): a card field in it, in a list or in a nested object."""
    fields = (schema() if isinstance(schema, type) else schema).fields.values()
    return any(_field_holds_cards(field) for field in fields)


def _field_holds_cards(field: ma.fields.Field) -> bool:
    if isinstance(field, CardField):
        return True
    if isinstance(field, ma.fields.List):
        return _field_holds_cards(field.inner)
    if isinstance(field, ma.fields.Nested):
        return holds_cards(field.schema)
    return False


def card_field(description: str, example: str = "Th", **kwargs) -> CardField:
    return CardField(metadata={**doc(description, example), "type": "string", "pattern": CARD_PATTERN}, **kwargs)


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


class ResponseSchema(ma.Schema):
    """A response body: documented open to fields added later (no ``additionalProperties:
    false``), as the contract promises. Request bodies stay strict (marshmallow's default)."""

    class Meta:
        unknown = ma.EXCLUDE


def nested(schema: type[ma.Schema], description: str, **kwargs) -> ma.fields.Nested:
    """A nested object (its example is its schema's, see ``openapi.examples_on_components``)."""
    return ma.fields.Nested(schema, metadata={"description": description}, **kwargs)


def nested_list(schema: type[ma.Schema], description: str, **kwargs) -> ma.fields.List:
    """A list of nested objects."""
    return ma.fields.List(ma.fields.Nested(schema), metadata={"description": description}, **kwargs)
