"""The versioned codec: a match as a compact JSON-able dict and back, exactly.

Every stored field is listed here, in one place, so nothing is forgotten in Redis. Bump
``FORMAT`` when the layout changes and keep decoding the older formats a deploy may meet.
"""
from __future__ import annotations

from .cards import CARD_BY_TEXT, NOTATION, Card
from .hand import Hand, HandResult, KnockInfo, Outcome, Phase, hand_result_from_dict
from .match import Match, MatchResult, Status
from .options import Rules

# 3: fair shuffles (the server and client seeds); 2 and 1 are still read (no server seed).
FORMAT = 3
READABLE_FORMATS = (1, 2, FORMAT)


class UnknownFormat(Exception):
    """A stored match in a format this version cannot read: a fault of the server, not of a client."""


def _cards(cards) -> str:
    return "".join([NOTATION[c.index] for c in cards])


def _uncards(text: str) -> tuple[Card, ...]:
    return tuple(CARD_BY_TEXT[text[i:i + 2]] for i in range(0, len(text), 2))


def encode(match: Match) -> dict:
    return {
        "fmt": FORMAT, "variant": match.variant, "rules": match.rules.as_dict(), "names": list(match.names),
        "seed": match.seed, "scores": list(match.scores), "won": list(match.hands_won), "dealer": match.dealer,
        "captain": match.captain, "sitter": match.sitter, "deals": match.deals,
        "hand": _encode_hand(match.hand) if match.hand else None,
        "last": match.last_hand.as_dict() if match.last_hand else None,
        "result": match.result.as_dict() if match.result else None,
        "advice": list(match.advice), "version": match.version, "events": match.event_count,
        "bots": list(match.bots), "timeouts": list(match.timeouts),
        "ss": match.server_seed, "cs": match.client_seed,
    }


def decode(data: dict) -> Match:
    """The match ``encode`` produced (this format or an earlier one). Raises UnknownFormat."""
    fmt = data.get("fmt")
    if fmt not in READABLE_FORMATS:
        raise UnknownFormat(f"stored game format {fmt!r} is not supported")
    seats = len(data["names"])
    last, result = data["last"], data["result"]
    return Match(
        variant=data["variant"], rules=Rules(**data["rules"]), names=tuple(data["names"]),
        seed=None if data["seed"] is None else str(data["seed"]),
        scores=tuple(data["scores"]), hands_won=tuple(data["won"]), dealer=data["dealer"], captain=data["captain"],
        sitter=data["sitter"], deals=data["deals"], hand=_decode_hand(data["hand"]) if data["hand"] else None,
        last_hand=_hand_result(last) if last else None, result=_match_result(result) if result else None,
        advice=tuple(data["advice"]), version=data["version"], event_count=data["events"],
        bots=tuple(data.get("bots") or (None,) * seats), timeouts=tuple(data.get("timeouts") or (0,) * seats),
        server_seed=data.get("ss"), client_seed=data.get("cs") or "",
    )


def _hand_result(data: dict) -> HandResult:
    if data["outcome"] == Outcome.DEAD.value:
        # The first format wrote dead hands with every knock field present and null.
        data = {key: data[key] for key in ("number", "outcome", "winner", "points", "hands")}
    return hand_result_from_dict(data)


def _match_result(data: dict) -> MatchResult:
    if "status" not in data:  # the first format: a match played out
        data = {**data, "status": Status.FINISHED.value}
    return MatchResult.from_dict(data)


def _encode_hand(hand: Hand) -> dict:
    out = {"n": hand.number, "d": hand.dealer, "o": hand.non_dealer, "h": list(hand.holdings),
           "s": _cards(hand.stock), "p": _cards(hand.pile), "ph": hand.phase.value, "t": hand.turn,
           "ps": hand.passes, "so": hand.stock_only, "tk": str(hand.taken) if hand.taken else None,
           "pk": list(hand.picked), "sh": list(hand.shed), "dc": list(hand.declined), "dl": hand.deadline}
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
                d["ps"], d["so"], CARD_BY_TEXT[d["tk"]] if d["tk"] else None, knock,
                tuple(d.get("pk", (0, 0))), tuple(d.get("sh", (0, 0))), tuple(d.get("dc", (0, 0))), d.get("dl"))


