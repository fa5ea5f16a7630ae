"""Fit the weights of the strong bot's discard value (service/bots/learned_weights.py).

Two steps, both in-process through the engine, single process:

    python bench/learn_discards.py generate --matches 1200 --out /tmp/discards.jsonl   # ~20 min
    python bench/learn_discards.py fit /tmp/discards.jsonl [more files] [--ridge 10]

(``generate --first N`` starts at match N, so that several processes can share the work.)

``generate`` plays the first hand of seeded classic matches (seeds ``trainCF:A:<i>``, never
bench/bots.py's ``<seed>:<i>``): the strong bot against standard in even-numbered matches and
against the reference bot in odd ones, the seats alternating every two matches. At each of
strong's plain discards it takes the five discards that the standard ranking shortlists and
plays **each** of them out to the end of the hand on the same deal (the same stock order and
opponent's hand; strong and the opponent decide as usual afterwards). Every shortlisted card so
gets its real outcome in net points, with the luck of the deal the same for all five: a paired
(counterfactual) label. It writes one JSON line per decision: the features of each candidate's
10-card hand (service/bots/learned_features.py) and the five outcomes. This step sees the
whole Match, which only an offline tool may; the bot itself sees its Observation alone.

``fit`` regresses the outcomes on the features within each decision (both centred on the
decision's mean, so only the differences between its candidates count) by ridge regression,
and prints: how often the best candidate by outcome differs from the standard ranking's first,
the gain in points per decision of the fitted choice over the ranking's first, on the half of
the matches it was not fitted on (each half in turn), and the weights on all of it, as the
tuple to paste into learned_weights.py.

The weights in learned_weights.py come from 6,317 matches (33,605 decisions: ``--first 20000
--matches 800``, ``--first 20800 --matches 800``, ``--first 21600 --matches 2400`` and
``--first 24000 --matches 2400``, fitted together), ridge 10, generated with the strong bot
before these 21 features (its 15 features and weights, take margin 4: the learned_weights.py
of commit 989cfeb) as the policy that played the hands out; the features the rows hold are
the 21 of now (the first 15 the same numbers as before). Earlier weights, on the first 15
features: 1,200 matches (6,536 decisions) played out by the strong bot of release 1.2.0.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT.parent), str(ROOT)]

from bots import policy  # noqa: E402  (bench/bots.py, found through sys.path above)

from service import rules  # noqa: E402
from service.bots.knowledge import know  # noqa: E402
from service.bots.learned_features import DISCARD_NAMES, discard_context, hand_features  # noqa: E402
from service.bots.standard import rank_discards, wants_knock  # noqa: E402
from service.bots.strong import CANDIDATES  # noqa: E402
from service.rules.melds import best_discard_mask  # noqa: E402

SEED_PREFIX = "trainCF:A"
strong = policy("strong")
Policy = Callable[[rules.Observation], rules.TurnAction]


def played_out(match: rules.Match, me: int, mine: Policy, opponent: Policy) -> int:
    """Net points of the hand for seat ``me``, played to its end from ``match``."""
    while True:
        seat = match.turn
        obs = rules.observe(match, seat)
        match, events = rules.apply(match, seat, mine(obs) if seat == me else opponent(obs))
        for event in events:
            if event.type is rules.EventType.HAND_SCORED:
                winner, points = event.public["winner"], event.public["points"]
                return 0 if winner is None else points if winner == me else -points


def my_turns(seed_prefix: str, number: int, mine: Policy) -> Iterator[tuple[rules.Match, int, Policy, rules.Observation]]:
    """The first hand of the classic match seeded ``<seed_prefix>:<number>``, ``mine`` in my seat
    against standard in even-numbered matches and the reference bot in odd ones, the seats
    alternating every two matches: yields (match, my seat, opponent, my observation) before each
    of my moves, then plays the move ``mine`` chooses."""
    opponent = policy("standard" if number % 2 == 0 else "reference")
    me = (number // 2) % 2
    match, _ = rules.new_match("classic", ["a", "b"], rules.rules_for("classic"), seed=f"{seed_prefix}:{number}")
    while True:
        seat = match.turn
        obs = rules.observe(match, seat)
        if seat == me:
            yield match, me, opponent, obs
        match, events = rules.apply(match, seat, mine(obs) if seat == me else opponent(obs))
        if any(event.type is rules.EventType.HAND_SCORED for event in events):
            return


def decisions_of_hand(number: int) -> Iterator[dict]:
    """The features of each candidate and the outcome of each, at strong's plain discards in
    the first hand of match ``number``."""
    for match, me, opponent, obs in my_turns(SEED_PREFIX, number, strong):
        if obs.phase is rules.Phase.DISCARD:
            forbidden = obs.taken.index if obs.taken else -1
            deadwood, _, _ = best_discard_mask(obs.cards, forbidden)
            if not (deadwood <= obs.rules.knock_limit and wants_knock(obs, deadwood)):
                knowledge = know(obs)
                context = discard_context(obs, knowledge)
                shortlist = [index for _, index in rank_discards(obs.cards, forbidden, obs, knowledge)[:CANDIDATES]]
                features = [hand_features(obs.cards ^ 1 << index, index, knowledge, context) for index in shortlist]
                outcomes = [played_out(rules.apply(match, me, rules.Discard(rules.CARDS[index]))[0], me, strong, opponent)
                            for index in shortlist]
                yield {"X": features, "y": outcomes}


def generate(rows_of_hand: Callable[[int], Iterable[dict]], first: int, matches: int, out: Path) -> None:
    """Write the rows of matches ``first``... one JSON line each, with the match's number."""
    started, written = time.monotonic(), 0
    with out.open("w") as sink:
        for number in range(first, first + matches):
            for row in rows_of_hand(number):
                sink.write(json.dumps({"match": number, **row}) + "\n")
                written += 1
            if number % 50 == 0:
                print(f"match {number}: {written} decisions, {time.monotonic() - started:.0f} s", file=sys.stderr)
    print(f"{written} decisions from {matches} hands in {out}")


def centred(rows: list[dict]) -> list[tuple[list[float], float]]:
    """Each candidate's features and outcome less its decision's means."""
    pairs = []
    for row in rows:
        means = [statistics.fmean(column) for column in zip(*row["X"])]
        mean_outcome = statistics.fmean(row["y"])
        pairs += [([value - mean for value, mean in zip(x, means)], y - mean_outcome) for x, y in zip(row["X"], row["y"])]
    return pairs


def ridge(rows: list[dict], penalty: float) -> list[float]:
    """Weights minimising the squared error of the centred outcomes plus ``penalty`` times |w|²."""
    size = len(DISCARD_NAMES)
    normal = [[penalty if i == j else 0.0 for j in range(size)] for i in range(size)]
    target = [0.0] * size
    for x, y in centred(rows):
        for i in range(size):
            target[i] += x[i] * y
            row = normal[i]
            for j in range(size):
                row[j] += x[i] * x[j]
    return solve(normal, target)


def solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """x with matrix·x = vector (Gaussian elimination with partial pivoting)."""
    size = len(vector)
    rows = [matrix[i][:] + [vector[i]] for i in range(size)]
    for column in range(size):
        pivot = max(range(column, size), key=lambda r: abs(rows[r][column]))
        rows[column], rows[pivot] = rows[pivot], rows[column]
        for r in range(column + 1, size):
            factor = rows[r][column] / rows[column][column]
            for c in range(column, size + 1):
                rows[r][c] -= factor * rows[column][c]
    solution = [0.0] * size
    for r in reversed(range(size)):
        solution[r] = (rows[r][size] - sum(rows[r][c] * solution[c] for c in range(r + 1, size))) / rows[r][r]
    return solution


def gain(rows: list[dict], weights: list[float]) -> tuple[float, float]:
    """Mean and 95 % half-width of (outcome of the fitted choice - outcome of the ranking's first)."""
    gains = []
    for row in rows:
        values = [sum(w * f for w, f in zip(weights, x)) for x in row["X"]]
        gains.append(row["y"][values.index(max(values))] - row["y"][0])
    return statistics.fmean(gains), 1.96 * statistics.stdev(gains) / len(gains) ** 0.5


def fit(data: list[Path], penalty: float) -> None:
    rows = [json.loads(line) for path in data for line in path.open()]
    print(f"{len(rows)} decisions from {len({row['match'] for row in rows})} hands")
    headroom = statistics.fmean(max(row["y"]) - row["y"][0] for row in rows)
    print(f"best outcome over the ranking's first, with hindsight: {headroom:+.3f} points per decision")
    matches = sorted({row["match"] for row in rows})
    halves = [set(matches[0::2]), set(matches[1::2])]
    for fitted, tested in (halves, halves[::-1]):
        weights = ridge([row for row in rows if row["match"] in fitted], penalty)
        mean, half = gain([row for row in rows if row["match"] in tested], weights)
        print(f"fitted on {len(fitted)} hands, tested on the other {len(tested)}: {mean:+.3f} ±{half:.3f} points per decision")
    weights = ridge(rows, penalty)
    for name, weight in zip(DISCARD_NAMES, weights):
        print(f"  {name:16s} {weight:+.4f}")
    print("DISCARD_WEIGHTS = (" + ", ".join(f"{weight:.4f}" for weight in weights) + ")")


def arguments(doc: str, matches: int, ridge: bool = False) -> argparse.Namespace:
    """The command line of a generate-then-fit script described by ``doc``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    steps = parser.add_subparsers(dest="step", required=True)
    making = steps.add_parser("generate", help="play out the choices of every decision; write them")
    making.add_argument("--matches", type=int, default=matches)
    making.add_argument("--first", type=int, default=0, help="number of the first match (to split the work)")
    making.add_argument("--out", type=Path, required=True)
    fitting = steps.add_parser("fit", help="fit to generated decisions")
    fitting.add_argument("data", type=Path, nargs="+", help="files written by generate")
    if ridge:
        fitting.add_argument("--ridge", type=float, default=10.0)
    return parser.parse_args()


def main() -> None:
    args = arguments(__doc__, 1200, ridge=True)
    if args.step == "generate":
        generate(decisions_of_hand, args.first, args.matches, args.out)
    else:
        fit(args.data, args.ridge)


if __name__ == "__main__":
    main()
