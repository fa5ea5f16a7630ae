"""Strength and speed of the computer players: seeded classic matches to 100, in-process.

Each pairing "a:b" plays ``--matches`` matches of policy a against policy b (a policy is a bot
level or ``reference``, OpenSpiel's simple bot in bench/reference_bot.py), a in seat 0 of
even-numbered matches and in seat 1 of odd ones, through the engine (new_match / observe /
apply) with default classic rules. Match i of every pairing is dealt from the same seed.

Prints a markdown table: per pairing, a's match win rate, hand win rate (of the hands somebody
won) and mean net points per hand (dead hands count 0), each with a 95 % interval (Wilson for
the rates, normal for the mean); then per policy the time of one decision (median, p99, max), as CPU time of the process
and as wall-clock time (the machine may be shared: CPU time is what the policy costs).

    python bench/bots.py [--matches 1000] [--pairings strong:reference,...] [--processes 2] [--seed 1]
"""
from __future__ import annotations

import argparse
import datetime
import math
import multiprocessing
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT.parent), str(ROOT)]

import reference_bot  # noqa: E402  (bench/reference_bot.py, found through sys.path above)

from service import bots, rules  # noqa: E402

DEFAULT_PAIRINGS = "strong:reference,standard:reference,easy:reference,strong:standard"
Z95 = 1.96
CHUNK = 10  # matches per task: small enough to spread over the processes, large enough to be cheap to hand out


def policy(name: str) -> Callable[[rules.Observation], rules.TurnAction]:
    if name == "reference":
        return reference_bot.choose
    level = bots.Level(name)
    return lambda obs: bots.choose(level, obs)


@dataclass
class Tally:
    """What one pairing's matches add up to, for its first-named policy."""

    matches: int = 0
    match_wins: int = 0
    hands: int = 0
    decided_hands: int = 0
    hand_wins: int = 0
    points: list[int] = field(default_factory=list)  # net points of each hand
    # Per policy, each decision's time: CPU time of this process (what the policy costs, whatever
    # else the machine runs) and wall-clock time (what a request would wait on this machine now).
    cpu: dict[str, list[float]] = field(default_factory=dict)
    wall: dict[str, list[float]] = field(default_factory=dict)

    def add(self, other: Tally) -> None:
        self.matches += other.matches
        self.match_wins += other.match_wins
        self.hands += other.hands
        self.decided_hands += other.decided_hands
        self.hand_wins += other.hand_wins
        self.points += other.points
        for mine, theirs in ((self.cpu, other.cpu), (self.wall, other.wall)):
            for name, times in theirs.items():
                mine.setdefault(name, []).extend(times)


def play(task: tuple[str, str, int, list[int]]) -> Tally:
    """Matches ``numbers`` of pairing (first, second) from ``seed``."""
    first, second, seed, numbers = task
    chooser = {first: policy(first), second: policy(second)}
    tally = Tally(cpu={first: [], second: []}, wall={first: [], second: []})
    for number in numbers:
        names = [first, second] if number % 2 == 0 else [second, first]
        mine = names.index(first)
        match, _ = rules.new_match("classic", names, rules.rules_for("classic"), seed=f"{seed}:{number}")
        while not match.is_finished:
            seat = match.turn
            name = names[seat]
            obs = rules.observe(match, seat)
            cpu, wall = time.process_time(), time.perf_counter()
            action = chooser[name](obs)
            tally.cpu[name].append(time.process_time() - cpu)
            tally.wall[name].append(time.perf_counter() - wall)
            match, events = rules.apply(match, seat, action)
            for event in events:
                if event.type is rules.EventType.HAND_SCORED:
                    winner, points = event.public["winner"], event.public["points"]
                    tally.hands += 1
                    tally.decided_hands += winner is not None
                    tally.hand_wins += winner == mine
                    tally.points.append(0 if winner is None else points if winner == mine else -points)
        tally.matches += 1
        tally.match_wins += match.result.winner == mine
    return tally


def wilson(successes: int, trials: int) -> tuple[float, float, float]:
    """(rate, low, high) with the 95 % Wilson score interval."""
    if not trials:
        return 0.0, 0.0, 0.0
    rate = successes / trials
    denominator = 1 + Z95 ** 2 / trials
    centre = (rate + Z95 ** 2 / (2 * trials)) / denominator
    half = Z95 * math.sqrt(rate * (1 - rate) / trials + Z95 ** 2 / (4 * trials ** 2)) / denominator
    return rate, centre - half, centre + half


def percent(stats: tuple[float, float, float]) -> str:
    rate, low, high = stats
    return f"{100 * rate:.1f} % ({100 * low:.1f}–{100 * high:.1f})"


def mean_interval(values: list[int]) -> str:
    mean = statistics.fmean(values)
    half = Z95 * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return f"{mean:+.2f} ({mean - half:+.2f}–{mean + half:+.2f})"


def run(pairings: list[tuple[str, str]], matches: int, processes: int, seed: int) -> dict[tuple[str, str], Tally]:
    tasks = [(first, second, seed, list(range(start, min(start + CHUNK, matches))))
             for first, second in pairings for start in range(0, matches, CHUNK)]
    totals = {pairing: Tally() for pairing in pairings}
    with multiprocessing.Pool(processes) as pool:
        for task, tally in zip(tasks, pool.imap(play, tasks)):
            pairing = task[0], task[1]
            totals[pairing].add(tally)
            if totals[pairing].matches == matches:
                print(row(pairing, totals[pairing]), file=sys.stderr, flush=True)  # progress: the runs are long
    return totals


def row(pairing: tuple[str, str], tally: Tally) -> str:
    first, second = pairing
    return (f"| {first} vs {second} | {tally.matches} | {percent(wilson(tally.match_wins, tally.matches))} "
            f"| {tally.hands} | {percent(wilson(tally.hand_wins, tally.decided_hands))} | {mean_interval(tally.points)} |")


def report(totals: dict[tuple[str, str], Tally], processes: int, seconds: float) -> str:
    lines = [f"Classic matches to 100 (default rules), {processes} process(es), {seconds:.0f} s, "
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC.", "",
             "| pairing (a vs b) | matches | a's match wins | hands | a's hand wins | a's net points per hand |",
             "|---|---|---|---|---|---|"]
    cpu: dict[str, list[float]] = {}
    wall: dict[str, list[float]] = {}
    for pairing, tally in totals.items():
        lines.append(row(pairing, tally))
        for mine, theirs in ((cpu, tally.cpu), (wall, tally.wall)):
            for name, spent in theirs.items():
                mine.setdefault(name, []).extend(spent)
    lines += ["", "| policy | decisions | CPU median ms | CPU p99 ms | CPU max ms | wall median ms | wall p99 ms | wall max ms |",
              "|---|---|---|---|---|---|---|---|"]
    for name in sorted(cpu):
        lines.append(f"| {name} | {len(cpu[name])} | {spread(cpu[name])} | {spread(wall[name])} |")
    return "\n".join(lines)


def spread(seconds: list[float]) -> str:
    """Median, p99 and max of decision times, in milliseconds, as table cells."""
    seconds = sorted(seconds)
    p99 = seconds[min(len(seconds) - 1, int(0.99 * len(seconds)))]
    return f"{1000 * statistics.median(seconds):.3f} | {1000 * p99:.3f} | {1000 * seconds[-1]:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=1000, help="matches per pairing")
    parser.add_argument("--pairings", default=DEFAULT_PAIRINGS, help="comma-separated a:b pairs of policies")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    pairings = [tuple(pair.split(":")) for pair in args.pairings.split(",")]
    for pair in pairings:
        for name in pair:
            policy(name)  # an unknown name fails here, before any match is played
    started = time.perf_counter()
    totals = run(pairings, args.matches, args.processes, args.seed)
    print(report(totals, args.processes, time.perf_counter() - started))


if __name__ == "__main__":
    main()
