"""Text that people show to other people (names, advice): what is accepted and how it is stored.

Such text is NFC-normalised, then refused when it holds a character that can disguise or break
what others see: controls, line and paragraph separators, format characters (bidirectional
overrides, zero-width spaces, tag characters) except the zero-width joiner that emoji
sequences need, private-use, unassigned and surrogate code points. It must also show
something: a name made only of spaces or of blank letters (such as U+3164 HANGUL FILLER) is
refused. The rule is enforced here rather than as a pattern in the OpenAPI document, because
the regular-expression engines of common clients disagree on such patterns.
"""
from __future__ import annotations

import unicodedata

import marshmallow as ma

ZERO_WIDTH_JOINER = "\u200d"
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"})
# Letters that render as nothing.
BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
RULE = ("NFC-normalised; no control, format (except the zero-width joiner of emoji), private-use, "
        "unassigned or line-separator characters; at least one visible character")


def refusal(text: str) -> str | None:
    """Why ``text`` (already NFC) may not be shown to others, or None when it may."""
    for char in text:
        if char != ZERO_WIDTH_JOINER and unicodedata.category(char) in REFUSED_CATEGORIES:
            return f"character U+{ord(char):04X} is not allowed"
    if not any(_is_visible(char) for char in text):
        return "nothing visible"
    return None


def _is_visible(char: str) -> bool:
    return char not in BLANK_LETTERS and unicodedata.category(char)[0] in "LNPS"


class ShownText(ma.fields.String):
    """A string of 1 to ``max_length`` characters (after NFC) that passes ``refusal``."""

    def __init__(self, max_length: int, **kwargs) -> None:
        self.max_length = max_length
        kwargs.setdefault("metadata", {})
        kwargs["metadata"] = {"minLength": 1, "maxLength": max_length, **kwargs["metadata"]}
        super().__init__(**kwargs)

    def _deserialize(self, value, attr, data, **kwargs) -> str:
        text = unicodedata.normalize("NFC", super()._deserialize(value, attr, data, **kwargs))
        if not 1 <= len(text) <= self.max_length:
            raise ma.ValidationError(f"Length must be between 1 and {self.max_length}.")
        reason = refusal(text)
        if reason is not None:
            raise ma.ValidationError(f"Not allowed: {reason}.")
        return text
