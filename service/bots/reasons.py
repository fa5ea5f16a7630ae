"""The hint's English line for each reason code; the code and its params carry the same facts
for clients that write their own (docs/api.md, "Hint", lists every code)."""
from __future__ import annotations

from types import MappingProxyType

from .choices import Choice


def _laid_off(params: dict) -> str:
    laid = ", ".join(params["layoffs"]) or "nothing"
    return (f"lay down {params['melds']} meld(s) and lay off {laid}, "
            f"leaving {params['deadwood']} deadwood: the least you can keep")


TEXTS = MappingProxyType({
    "take_lowers_deadwood": "take {card}: your deadwood goes from {before} to {after}".format,
    "take_builds_meld": "take {card}: it builds a meld with cards still to come (deadwood {before} to {after})".format,
    "upcard_does_not_help": "pass: {card} does not help your hand (deadwood {deadwood})".format,
    "draw_stock": "draw from the stock: {card} does not help your hand (deadwood {deadwood})".format,
    "draw_stock_required": "draw from the stock: after both players passed on the upcard, the first draw is from the stock".format,
    "knock": "knock, discarding {card}: {deadwood} deadwood is low enough to win the hand".format,
    "gin": "knock with gin, discarding {card}: all your other cards are in melds".format,
    "waits_for_gin": "discard {card} and wait for gin: {deadwood} deadwood would win, but about {outs} cards still to come give gin".format,
    "avoids_undercut": "discard {card} and keep playing: knocking with {deadwood} deadwood this late risks an undercut".format,
    "least_deadwood": "discard {card}: it leaves the least deadwood ({deadwood})".format,
    "safe_discard": "discard {card}: it leaves the least deadwood ({deadwood}), and your opponent passed on {their_card}".format,
    "keeps_partial_melds": "discard {card} rather than {kept}: {kept} can still make a meld (deadwood {deadwood})".format,
    "avoids_feeding_opponent": "discard {card} rather than {kept}: your opponent could use {kept} (deadwood {deadwood})".format,
    "best_layoff": lambda **params: _laid_off(params),
})


def explain(choice: Choice) -> str:
    return TEXTS[choice.code](**choice.params)
