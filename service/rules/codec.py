"""The versioned codec: a match as a compact JSON-able dict and back, exactly.

Every stored field is listed here, in one place, so nothing is forgotten in Redis. Bump
``FORMAT`` when the layout changes and keep decoding the older formats a deploy may meet.
"""
from __future__ import annotations

from .cards import CARD_BY_TEXT, NOTATION, Card
from .errors import InvalidInput
from .hand import Hand, KnockInfo, Phase
from .match import Match
from .options import Rules

FORMAT = 1


def _cards(cards) -> str:
    return "".join([NOTATION[c.index] for c in cards])


def _uncards(text: str) -> tuple[Card, ...]:
    return tuple(CARD_BY_TEXT[text[i:i + 2]] for i in range(0, len(text), 2))


def encode(match: Match) -> dict:
    return {
        "fmt": FORMAT, "variant": match.variant, "rules": match.rules.as_dict(), "names": list(match.names),
        "seed": match.seed, "scores": list(match.scores), "won": list(match.hands_won), "dealer": match.dealer,
        "captain": match.captain, "sitter": match.sitter, "deals": match.deals,
        "hand": _encode_hand(match.hand) if match.hand else None, "last": match.last_hand, "result": match.result,
        "advice": list(match.advice), "version": match.version, "events": match.event_count,
    }


def decode(data: dict) -> Match:
    """The match ``encode`` produced. Raises InvalidInput for an unknown format."""
    if data.get("fmt") != FORMAT:
        raise InvalidInput("invalid_request", f"stored game format {data.get('fmt')!r} is not supported")
    return Match(
        variant=data["variant"], rules=Rules(**data["rules"]), names=tuple(data["names"]), seed=data["seed"],
        scores=tuple(data["scores"]), hands_won=tuple(data["won"]), dealer=data["dealer"], captain=data["captain"],
        sitter=data["sitter"], deals=data["deals"], hand=_decode_hand(data["hand"]) if data["hand"] else None,
        last_hand=data["last"], result=data["result"], advice=tuple(data["advice"]), version=data["version"],
        event_count=data["events"],
    )


def _encode_hand(hand: Hand) -> dict:
    out = {"n": hand.number, "d": hand.dealer, "o": hand.non_dealer, "h": list(hand.holdings),
           "s": _cards(hand.stock), "p": _cards(hand.pile), "ph": hand.phase.value, "t": hand.turn,
           "ps": hand.passes, "so": hand.stock_only, "tk": str(hand.taken) if hand.taken else None}
    if hand.knock:
        k = hand.knock
        out["k"] = {"by": k.knocker, "x": str(k.discard), "m": [_cards(m) for m in k.melds],
                    "dc": _cards(k.deadwood_cards), "dw": k.deadwood}
    return out


def _decode_hand(d: dict) -> Hand:
    knock = None
    if "k" in d:
        k = d["k"]
        knock = KnockInfo(k["by"], CARD_BY_TEXT[k["x"]], tuple(_uncards(m) for m in k["m"]), _uncards(k["dc"]), k["dw"])
    return Hand(d["n"], d["d"], d["o"], tuple(d["h"]), _uncards(d["s"]), _uncards(d["p"]), Phase(d["ph"]), d["t"],
                d["ps"], d["so"], CARD_BY_TEXT[d["tk"]] if d["tk"] else None, knock)
