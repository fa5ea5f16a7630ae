"""The text notation of a record (docs/records.md, "The text notation"): the same record as a
compact text, one line per action, that ``parse`` reads back into the very same record.

    ginrummy-record/1
    id g_3q5Jt0-8bJpYc2mXkq1WZA
    variant classic
    created 2026-12-01T10:00:00.000Z
    seeded no
    rules {"knock_limit":10,...}
    player 0 person "Ann"
    player 1 strong "Robo"
    fairness {"server_seed":"...","commitment":"...","client_seed":"..."}
    cut Kd4c yes
    hand 1 dealer 0 non_dealer 1 roles dealer,player
    dealt 1 As2s3s4c5c6h7h8h9sTd
    dealt 0 ...
    upcard 9c
    stock 4d...
    1 +7.000 1 - pass
    2 +14.250 0 - draw discard 9c
    3 +14.250 1 b draw stock Kd
    ...
    result {"number":1,...}
    end {"status":"finished",...}

An action line is ``<step> <time> <seat> <flags> <type> <fields>``: the time in seconds after
``created`` (after the epoch when that is ``-``), to the millisecond, or ``-`` when unknown;
the seat or ``-`` (an abort); the flags ``-``, ``b`` (a bot chose it), ``t`` (played after a
missed deadline) or ``bt``. Cards are written run together, melds separated by commas,
lay-offs as ``<card>@<meld index>``; ``-`` stands for none. Free text (names, advice, the
client seed) and the results are JSON.
"""
from __future__ import annotations

import json

from service.records.record import FORMAT, epoch_ms, iso_ms

NONE = "-"
YES, NO = "yes", "no"
PERSON = "person"
SEPARATOR = (",", ":")


class TextError(ValueError):
    """The text is not a record in this notation: ``line`` (1-based) says where."""

    def __init__(self, line: int, detail: str) -> None:
        super().__init__(f"line {line}: {detail}")
        self.line = line


def to_text(record: dict) -> str:
    """``record`` in the text notation (one line per action, a final newline)."""
    base = _base_ms(record)
    lines = [FORMAT, f"id {record['id']}", f"variant {record['variant']}", f"created {record['created_at'] or NONE}",
             f"seeded {YES if record['seeded'] else NO}", f"rules {_json(record['rules'])}"]
    lines += [f"player {p['seat']} {p['level'] or PERSON} {_json(p['name'])}" for p in record["players"]]
    lines.append(f"fairness {_json(record['fairness']) if record['fairness'] else NONE}")
    lines += [f"cut {''.join(cut['cards'])} {YES if cut['decided'] else NO}" for cut in record["cuts"]]
    for hand in record["hands"]:
        lines.append(f"hand {hand['number']} dealer {hand['dealer']} non_dealer {hand['non_dealer']} "
                     f"roles {','.join(hand['roles'])}")
        lines += [f"dealt {seat} {''.join(hand['dealt'][str(seat)])}" for seat in (hand["non_dealer"], hand["dealer"])]
        lines += [f"upcard {hand['upcard']}", f"stock {''.join(hand['stock'])}"]
        lines += [_action_line(action, base) for action in hand["actions"]]
        lines.append(f"result {_json(hand['result'])}")
    lines.append(f"end {_json(record['result'])}")
    return "\n".join(lines) + "\n"


def _base_ms(record: dict) -> int:
    return 0 if record["created_at"] is None else epoch_ms(record["created_at"])


def _json(value: object) -> str:
    return json.dumps(value, separators=SEPARATOR, ensure_ascii=False)


def _action_line(action: dict, base: int) -> str:
    time = NONE if action["time"] is None else _offset(epoch_ms(action["time"]) - base)
    seat = NONE if action["seat"] is None else str(action["seat"])
    flags = ("b" if action["bot"] else "") + ("t" if action["timeout"] else "") or NONE
    head = f"{action['step']} {time} {seat} {flags} {action['type']}"
    fields = _FIELDS_TO_TEXT[action["type"]](action)
    return f"{head} {fields}" if fields else head


def _offset(ms: int) -> str:
    sign = "-" if ms < 0 else "+"
    return f"{sign}{abs(ms) // 1000}.{abs(ms) % 1000:03d}"


def _cards(cards: list[str]) -> str:
    return "".join(cards) or NONE


def _melds(melds: list[list[str]]) -> str:
    return ",".join("".join(meld) for meld in melds) or NONE


def _layoffs(layoffs: list[dict]) -> str:
    return ",".join(f"{item['card']}@{item['meld']}" for item in layoffs) or NONE


_FIELDS_TO_TEXT = {
    "draw": lambda a: f"{a['source']} {a['card']}",
    "pass": lambda a: "",
    "discard": lambda a: a["card"],
    "knock": lambda a: f"{a['discard']} {_melds(a['melds'])}",
    "layoff": lambda a: f"{_melds(a['melds'])} {_layoffs(a['layoffs'])}",
    "advice": lambda a: _json({"message": a["message"], "action": a["action"]}),
    "timeout": lambda a: a["deadline"],
    "resign": lambda a: "",
    "abort": lambda a: "",
}


# --- reading ----------------------------------------------------------------------------------

def parse(text: str) -> dict:
    """The record ``to_text`` wrote as ``text``. Raises TextError naming the line it cannot read."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    reader = _Reader(lines)
    try:
        return reader.record()
    except TextError:
        raise
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise TextError(reader.number, f"cannot read {reader.current()[:40]!r} ({type(error).__name__})") from None


class _Reader:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.number = 0  # of the line last taken

    def current(self) -> str:
        return self.lines[self.number - 1] if 0 < self.number <= len(self.lines) else ""

    def peek(self) -> str:
        return self.lines[self.number] if self.number < len(self.lines) else ""

    def take(self, keyword: str) -> str:
        """The rest of the next line, which must start with ``keyword``."""
        line = self.peek()
        word, _, rest = line.partition(" ")
        if word != keyword:
            self.number += 1
            raise TextError(self.number, f"expected {keyword!r}, found {line[:40]!r}")
        self.number += 1
        return rest

    def record(self) -> dict:
        if self.take(FORMAT) != "":
            raise TextError(self.number, f"the first line must be {FORMAT}")
        record: dict = {"format": FORMAT, "id": self.take("id"), "variant": self.take("variant")}
        created = self.take("created")
        record["created_at"] = None if created == NONE else iso_ms(epoch_ms(created))
        record["seeded"] = _yes_no(self.take("seeded"), self.number)
        record["rules"] = json.loads(self.take("rules"))
        record["players"] = []
        while self.peek().startswith("player "):
            seat, level, name = self.take("player").split(" ", 2)
            record["players"].append({"seat": int(seat), "name": json.loads(name), "bot": level != PERSON,
                                      "level": None if level == PERSON else level})
        fairness = self.take("fairness")
        record["fairness"] = None if fairness == NONE else json.loads(fairness)
        record["cuts"] = []
        while self.peek().startswith("cut "):
            cards, decided = self.take("cut").split(" ")
            record["cuts"].append({"cards": _split(cards), "decided": _yes_no(decided, self.number)})
        base = _base_ms(record)
        record["hands"], record["result"], record["steps"] = [], None, 0
        while self.peek().startswith("hand "):
            record["hands"].append(self.hand(record, base))
        record["result"] = json.loads(self.take("end"))
        if self.number != len(self.lines):
            raise TextError(self.number + 1, "nothing may follow the end line")
        return record

    def hand(self, record: dict, base: int) -> dict:
        words = self.take("hand").split(" ")
        if words[1::2] != ["dealer", "non_dealer", "roles"]:
            raise TextError(self.number, "a hand line is: hand <number> dealer <seat> non_dealer <seat> roles <roles>")
        number, dealer, non_dealer, roles = int(words[0]), int(words[2]), int(words[4]), words[6].split(",")
        dealt = {}
        for _ in range(2):
            seat, cards = self.take("dealt").split(" ")
            dealt[seat] = _split(cards)
        hand = {"number": number, "dealer": dealer, "non_dealer": non_dealer, "roles": roles, "dealt": dealt,
                "upcard": self.take("upcard"), "stock": _split(self.take("stock")), "actions": []}
        while self.peek()[:1].isdigit():
            self.number += 1
            record["steps"] += 1
            hand["actions"].append(self.action(self.current(), record["steps"], base))
        hand["result"] = json.loads(self.take("result"))
        return hand

    def action(self, line: str, expected_step: int, base: int) -> dict:
        step, time, seat, flags, kind, *rest = line.split(" ", 5)
        if int(step) != expected_step:
            raise TextError(self.number, f"expected step {expected_step}, found {step}")
        if kind not in _FIELDS_FROM_TEXT or flags not in ("-", "b", "t", "bt"):
            raise TextError(self.number, f"not an action line: {line[:40]!r}")
        action = {"step": expected_step, "seat": None if seat == NONE else int(seat), "type": kind}
        action.update(_FIELDS_FROM_TEXT[kind](rest[0] if rest else ""))
        action["time"] = None if time == NONE else iso_ms(base + _milliseconds(time))
        action["bot"], action["timeout"] = "b" in flags, "t" in flags
        return action


def _yes_no(word: str, line: int) -> bool:
    if word not in (YES, NO):
        raise TextError(line, f"expected yes or no, found {word[:20]!r}")
    return word == YES


def _split(cards: str) -> list[str]:
    if cards == NONE:
        return []
    if len(cards) % 2:
        raise ValueError("cards are two characters each")
    return [cards[i:i + 2] for i in range(0, len(cards), 2)]


def _milliseconds(offset: str) -> int:
    sign = -1 if offset.startswith("-") else 1
    seconds, _, millis = offset.lstrip("+-").partition(".")
    if len(millis) != 3 or not (seconds.isdigit() and millis.isdigit()) or offset[:1] not in "+-":
        raise ValueError("a time is +<seconds>.<milliseconds>")
    return sign * (int(seconds) * 1000 + int(millis))


def _unmelds(text: str) -> list[list[str]]:
    return [] if text == NONE else [_split(meld) for meld in text.split(",")]


def _unlayoffs(text: str) -> list[dict]:
    if text == NONE:
        return []
    return [{"card": card, "meld": int(meld)} for card, meld in (item.split("@") for item in text.split(","))]


def _two(text: str) -> tuple[str, str]:
    first, second = text.split(" ")
    return first, second


def _draw(text: str) -> dict:
    source, card = _two(text)
    return {"source": source, "card": card}


def _knock(text: str) -> dict:
    discard, melds = _two(text)
    return {"discard": discard, "melds": _unmelds(melds)}


def _layoff(text: str) -> dict:
    melds, layoffs = _two(text)
    return {"melds": _unmelds(melds), "layoffs": _unlayoffs(layoffs)}


def _advice(text: str) -> dict:
    advice = json.loads(text)
    return {"message": advice["message"], "action": advice["action"]}


def _nothing(text: str) -> dict:
    if text:
        raise ValueError("this action has no fields")
    return {}


_FIELDS_FROM_TEXT = {
    "draw": _draw,
    "pass": _nothing,
    "discard": lambda text: {"card": text},
    "knock": _knock,
    "layoff": _layoff,
    "advice": _advice,
    "timeout": lambda text: {"deadline": text},
    "resign": _nothing,
    "abort": _nothing,
}
