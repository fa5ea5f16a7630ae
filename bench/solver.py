"""Speed of the rules engine's solver against its targets and against the brute-force reference.

Prints, per workload, the median / p99 / max microseconds per call of the engine (the bitmask
entry points and the public ones on card notation) and of tests/rules/reference.py on the
same hands, measured in this run, and the ratio reference / engine.

    python bench/solver.py [--quick]
"""
from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "rules")]

import reference  # noqa: E402  (tests/rules/reference.py, found through sys.path above)

from service.rules.cards import mask_of, parse_cards  # noqa: E402
from service.rules.melds import analyze_hand, best_discard_mask, best_layoff, min_deadwood_mask  # noqa: E402

SEED = 20240607
ADVERSARIAL = "4c 4d 4h 4s 5c 5d 5h 5s 6c 6d 6h".split()
DECK = list(reference.DECK)


@dataclass(frozen=True)
class Target:
    """A bound on one statistic of an engine workload, printed next to the figures."""

    stat: str  # a Timing field: "median" or "worst_hand"
    micros: float

    def met(self, timing: Timing) -> bool:
        return getattr(timing, self.stat) <= self.micros

    def __str__(self) -> str:
        return f"{'worst' if self.stat == 'worst_hand' else self.stat}<={self.micros:g}"


@dataclass(frozen=True)
class Timing:
    count: int
    median: float
    p99: float
    max: float
    worst_hand: float  # the slowest inputs timed again: the cost of the costliest hand, not of a preemption
    slowest: int  # index of the input of the slowest call


RETIMED, RETIMES = 10, 5


def time_calls(call: Callable, inputs: Sequence) -> Timing:
    """Microseconds per ``call(*args)`` for each args tuple, timed one by one with the collector off
    (after a few untimed calls, so one-off first-call costs do not count).

    The RETIMED slowest inputs are timed RETIMES times more; the least of an input's times is
    its own cost, so ``worst_hand`` (the largest such cost) ignores the scheduler's pauses that
    ``max`` includes.
    """
    clock = time.perf_counter_ns

    def timed(args) -> int:
        start = clock()
        call(*args)
        return clock() - start

    for args in inputs[:5]:
        call(*args)
    gc.collect()
    gc.disable()
    try:
        samples = [timed(args) for args in inputs]
        slowest = sorted(range(len(samples)), key=samples.__getitem__)[-RETIMED:]
        worst_hand = max(min([samples[i]] + [timed(inputs[i]) for _ in range(RETIMES)]) for i in slowest)
    finally:
        gc.enable()
    micros = sorted(s / 1000 for s in samples)
    p99 = micros[min(len(micros) - 1, int(len(micros) * 0.99))]
    return Timing(len(micros), statistics.median(micros), p99, micros[-1], worst_hand / 1000, slowest[-1])


# --- Hands --------------------------------------------------------------------------------------

def random_hand(rng: random.Random, size: int, excluded: frozenset[str] = frozenset()) -> list[str]:
    return rng.sample([c for c in DECK if c not in excluded], size)


def meld_group(rng: random.Random) -> list[str]:
    """A run of 3-6 cards of one suit or a set of 3-4 cards of one rank."""
    if rng.random() < 0.5:
        length = rng.randint(3, 6)
        low, suit = rng.randint(0, 13 - length), rng.choice(reference.SUITS)
        return [reference.RANKS[r] + suit for r in range(low, low + length)]
    rank = rng.choice(reference.RANKS)
    return [rank + s for s in rng.sample(reference.SUITS, rng.randint(3, 4))]


def fill(rng: random.Random, core: Sequence[str], size: int, excluded: frozenset[str] = frozenset()) -> list[str]:
    """The first ``size`` distinct cards of ``core`` not in ``excluded``, topped up with random ones."""
    cards = [c for c in dict.fromkeys(core) if c not in excluded][:size]
    return cards + random_hand(rng, size - len(cards), excluded | frozenset(cards))


def meld_heavy_hand(rng: random.Random, size: int) -> list[str]:
    """Either a few (possibly overlapping) runs and sets plus noise, or cards of 3-4 adjacent ranks in all suits."""
    if rng.random() < 0.5:
        return fill(rng, [c for _ in range(rng.randint(2, 4)) for c in meld_group(rng)], size)
    width = rng.randint(3, 4)
    low = rng.randint(0, 13 - width)
    block = [reference.RANKS[r] + s for r in range(low, low + width) for s in reference.SUITS]
    return rng.sample(block, size)


def extensions(meld: Sequence[str]) -> list[str]:
    """A set's missing suits, or up to three cards beyond each end of a run."""
    if reference.is_set(meld):
        return [meld[0][0] + s for s in reference.SUITS if meld[0][0] + s not in meld]
    ranks = sorted(reference.rank_index(c) for c in meld)
    near = [*range(ranks[0] - 3, ranks[0]), *range(ranks[-1] + 1, ranks[-1] + 4)]
    return [reference.RANKS[r] + meld[0][1] for r in near if 0 <= r < 13]


def random_table(rng: random.Random):
    """Knocker's melds from the best arrangement of a random hand; 10 other random cards for the defender."""
    knocker = random_hand(rng, 10)
    return analyze_hand(knocker).melds, random_hand(rng, 10, frozenset(knocker))


def meld_heavy_table(rng: random.Random):
    """Knocker's melds from a meld-heavy hand; the defender holds cards that extend them, plus noise."""
    knocker = meld_heavy_hand(rng, 10)
    melds = analyze_hand(knocker).melds
    near = [c for meld in melds for c in extensions([str(x) for x in meld])]
    rng.shuffle(near)
    return melds, fill(rng, near[:rng.randint(0, 7)], 10, frozenset(knocker))


# --- Workloads ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    operation: str
    hands: str
    inputs: list  # args tuples for the engine calls and the reference
    engine: list[tuple[str, Callable, Callable]]  # (name, call, args -> the call's args)
    reference: Callable
    targets: tuple[Target, ...]


def workloads(rng: random.Random, count: int, adversarial_repeats: int) -> list[Workload]:
    def masked(cards):
        return (mask_of(parse_cards(cards)),)

    def as_is(*args):
        return args

    kinds = {"random": lambda size: random_hand(rng, size), "meld-heavy": lambda size: meld_heavy_hand(rng, size)}
    no_slow_hand = Target("worst_hand", 500)
    targets_11 = {"random": (Target("median", 20), no_slow_hand), "meld-heavy": (Target("median", 40), no_slow_hand)}
    out = []
    for kind, make in kinds.items():
        tens = [(make(10),) for _ in range(count)]
        out.append(Workload("10-card min deadwood", kind, tens,
                            [("min_deadwood_mask", min_deadwood_mask, masked), ("analyze_hand", analyze_hand, as_is)],
                            reference.min_deadwood, (Target("median", 8),)))
        elevens = [(make(11),) for _ in range(count)]
        out.append(Workload("11-card best discard", kind, elevens,
                            [("best_discard_mask", best_discard_mask, masked), ("analyze_hand", analyze_hand, as_is)],
                            reference.best_discard, targets_11[kind]))
    for kind, table in (("random", random_table), ("meld-heavy", meld_heavy_table)):
        out.append(Workload("best lay-off", kind, [table(rng) for _ in range(count)],
                            [("best_layoff", best_layoff, as_is)], reference.best_layoff_deadwood, (Target("median", 50),)))
    out.append(Workload("11-card best discard", "adversarial", [(ADVERSARIAL,)] * adversarial_repeats,
                        [("best_discard_mask", best_discard_mask, masked), ("analyze_hand", analyze_hand, as_is)],
                        reference.best_discard, (no_slow_hand,)))
    return out


def machine() -> str:
    cpu = platform.processor() or "unknown cpu"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                    if line.startswith("model name")), cpu)
    return (f"date {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}\n"
            f"machine {platform.platform()}, {cpu}, {os.cpu_count()} cpus\n"
            f"python {platform.python_implementation()} {platform.python_version()}; "
            f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (other work on the machine inflates p99 and max)")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer hands (a smoke run, noisier figures)")
    quick = parser.parse_args(argv).quick
    count, reference_count, repeats, reference_repeats = (300, 20, 300, 5) if quick else (3000, 150, 3000, 20)
    print(machine())
    print(f"seed {SEED}; engine: {count} hands per workload ({repeats} repeats of the adversarial hand); "
          f"reference: the first {reference_count} ({reference_repeats} repeats)\n")
    header = (f"{'operation':<21} {'hands':<11} {'call':<18} {'n':>5} {'median':>8} {'p99':>8} {'max':>8} {'worst':>8}  "
              f"{'target':<30} {'ref n':>5} {'ref med':>9} {'ref p99':>9} {'ref/eng':>8}")
    print("microseconds per call\n" + header + "\n" + "-" * len(header))
    missed, slowest_11 = [], (0.0, 0.0, "", "")
    for work in workloads(random.Random(SEED), count, repeats):
        reference_inputs = work.inputs[:reference_repeats if work.hands == "adversarial" else reference_count]
        ref = time_calls(work.reference, reference_inputs)
        for name, call, prepare in work.engine:
            engine = time_calls(call, [prepare(*args) for args in work.inputs])
            verdict = " ".join(f"{t}:{'ok' if t.met(engine) else 'MISSED'}" for t in work.targets)
            missed += [f"{work.operation} / {work.hands} / {name} ({t})" for t in work.targets if not t.met(engine)]
            if work.operation.startswith("11-card"):
                slowest_11 = max(slowest_11, (engine.max, engine.worst_hand, name, " ".join(work.inputs[engine.slowest][0])),
                                 key=lambda row: row[0])
            print(f"{work.operation:<21} {work.hands:<11} {name:<18} {engine.count:>5} {engine.median:>8.1f} "
                  f"{engine.p99:>8.1f} {engine.max:>8.1f} {engine.worst_hand:>8.1f}  {verdict:<30} {ref.count:>5} {ref.median:>9.0f} "
                  f"{ref.p99:>9.0f} {ref.median / engine.median:>7.0f}x")
    print("\nmax: slowest single call; worst: the {} slowest hands timed {} more times each, "
          "the largest of their least times".format(RETIMED, RETIMES))
    print("slowest 11-card engine call over all hands: {:.1f} us ({} on {}); worst 11-card hand of that workload {:.1f} us"
          .format(slowest_11[0], slowest_11[2], slowest_11[3], slowest_11[1]))
    print("targets: 11-card best discard median <= 20 us random, <= 40 us meld-heavy, no hand over 500 us; "
          "10-card min deadwood median <= 8 us; best lay-off median <= 50 us")
    print("missed: " + ("; ".join(missed) if missed else "none"))


if __name__ == "__main__":
    main()
