"""What a finished match's record, replay and analysis cost: CPU per match and record sizes.

Plays ``--matches`` seeded matches in this process through the use cases on the embedded store
(half classic, half box; every seat a person, each playing as one of the bot levels, so that
every turn is a decision the analysis looks at), then measures, per match, the CPU of:

- the first ``GET .../analysis``: load, the record built from the events, the replay with the
  strong policy asked at every decision, the result compressed and kept (later requests read it);
- ``GET .../replay?step=<last>`` the first time, the costliest replay (it plays every step, keeping
  a position every 16), and ``GET .../replay`` of the step before, as a replay viewer asks next
  (from the kept positions);
- ``GET .../record``, and ``ginrummy verify`` of it;

and the record's size as JSON, as text, and as the JSON zlib-compressed. Prints the median, p90
and max of each, with the decisions and steps per match.

    python bench/analysis.py [--matches 200] [--seed 1]
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from service import bots, rules  # noqa: E402
from service.games import Caller, Context, GameService, NewGame, NewSeat, Retry, Settings  # noqa: E402
from service.games.record import Record  # noqa: E402
from service.games.setup import Uncounted  # noqa: E402
from service.records import text  # noqa: E402
from service.records.service import RecordService  # noqa: E402
from service.records.verify import verify  # noqa: E402
from service.store.memory import MemoryStore  # noqa: E402

SECRET = "bench-analysis-server-secret-0123456789abcdef"
LEVELS = [level.value for level in bots.Level]


def cpu(call: Callable[[], object]) -> tuple[float, object]:
    """(CPU seconds of ``call``, its result)."""
    started = time.process_time()
    result = call()
    return time.process_time() - started, result


def play(games: GameService, store: MemoryStore, variant: str, seed: int, rng: random.Random) -> str:
    """A seeded match of people only, each playing as a bot level drawn from ``rng``, to its end."""
    seats = tuple(NewSeat(f"P{n}") for n in range(rules.SEATS[variant]))
    created = games.create(NewGame(variant, seats, None, seed, client_seed=f"bench {seed}"),
                           Caller("0" * 32, "203.0.113.7", embedded=True))
    levels = [rng.choice(LEVELS) for _ in seats]
    tokens = [p.token for p in created.players]
    while True:
        match = Record.parse(store.load(created.game_id).state).match
        if match.is_finished:
            return created.game_id
        seat = match.turn
        action = bots.choose(levels[seat], rules.observe(match, seat))
        games.act(created.game_id, tokens[seat], action, Retry())


def summary(name: str, values: list[float], unit: str, scale: float = 1.0) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return (f"{name:<38} median {statistics.median(ordered) * scale:9.1f}  p90 {p90 * scale:9.1f}  "
            f"max {ordered[-1] * scale:9.1f} {unit}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    store = MemoryStore()
    context = Context(store, Settings(), Uncounted(), SECRET)
    games, records = GameService(context), RecordService(context, analysis_per_minute=0)
    rng = random.Random(args.seed)
    figures: dict[str, list[float]] = {name: [] for name in (
        "analysis", "replay", "replay again", "record", "verify", "decisions", "steps", "json", "text", "zlib")}
    started = time.monotonic()
    for n in range(args.matches):
        variant = "classic" if n % 2 == 0 else "box"
        game_id = play(games, store, variant, args.seed * 100_000 + n, rng)
        seconds, analysis = cpu(lambda: records.analysis(game_id, "bench"))
        figures["analysis"].append(seconds)
        figures["decisions"].append(len(analysis["decisions"]))
        seconds, record = cpu(lambda: records.record(game_id))
        figures["record"].append(seconds)
        figures["steps"].append(record["steps"])
        figures["replay"].append(cpu(lambda: records.replay(game_id, record["steps"]))[0])
        figures["replay again"].append(cpu(lambda: records.replay(game_id, record["steps"] - 1))[0])
        seconds, mismatch = cpu(lambda: verify(record))
        assert mismatch is None, mismatch
        figures["verify"].append(seconds)
        written = json.dumps(record, separators=(",", ":")).encode()
        figures["json"].append(len(written))
        figures["text"].append(len(text.to_text(record).encode()))
        figures["zlib"].append(len(zlib.compress(written)))
    print(f"bench/analysis.py: {args.matches} matches (half classic, half box, people only), seed {args.seed}, "
          f"Python {platform.python_version()}, {time.monotonic() - started:.0f} s in all")
    print(summary("analysis, first request (CPU)", figures["analysis"], "ms", 1000))
    print(summary("replay of the last step, first (CPU)", figures["replay"], "ms", 1000))
    print(summary("replay of the step before (CPU)", figures["replay again"], "ms", 1000))
    print(summary("record (CPU)", figures["record"], "ms", 1000))
    print(summary("verify (CPU)", figures["verify"], "ms", 1000))
    print(summary("decisions analysed per match", figures["decisions"], ""))
    print(summary("steps per match", figures["steps"], ""))
    print(summary("record as JSON", figures["json"], "KB", 1 / 1000))
    print(summary("record as text", figures["text"], "KB", 1 / 1000))
    print(summary("record as JSON, zlib", figures["zlib"], "KB", 1 / 1000))
    per_decision = [s / d for s, d in zip(figures["analysis"], figures["decisions"]) if d]
    print(summary("analysis CPU per decision", per_decision, "ms", 1000))


if __name__ == "__main__":
    main()
