"""The bot levels' ratings on the Glicko scale, measured by playing the levels against one another.

Classic (default): every pair of levels plays ``--matches`` seeded matches to 100 (default
rules) through the engine, the first-named level in seat 0 of even-numbered matches and in
seat 1 of odd ones; match i of every pair is dealt from the same seed. Box (``--variant box``,
exactly three levels): ``--matches`` matches with one seat per level, the seating rotated
through its six orders; each match is three pairwise games. Either way a match counts as the
service counts it for ratings (service/ratings/outcomes.py): classic winner 1, loser 0; box
pairs by final totals, equal totals a draw.

Printed: per pair, the games played and the first level's score rate (draws half) with its
95 % Wilson interval, next to what the fit expects; per level, the maximum-likelihood
Bradley-Terry rating (the logistic of Glicko's expected score, 1 / (1 + e^(-(a - b) / 173.7178)),
i.e. 1 / (1 + 10^(-(a - b) / 400)), anchored so that ``--anchor`` holds, by default standard =
1500) with its standard error, measured against the mean of the levels (so every level, the
anchor too, has one) and against the anchor; Pearson's chi-square of the fit; then the
``BOT_RATINGS`` lines that service/ratings/bots.py holds (RD: the standard error against the
mean, widened by sqrt(chi-square / degrees of freedom) when that exceeds 1, rounded up).

    python bench/bot_ratings.py [--matches 3000] [--variant classic|box] [--levels easy,standard,strong]
                                [--anchor standard=1500] [--seed 1] [--processes 1]
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import math
import multiprocessing
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT.parent), str(ROOT)]

import bots as bench_bots  # noqa: E402  (bench/bots.py: policies by name, Wilson intervals)

from service import rules  # noqa: E402
from service.ratings.glicko2 import SCALE  # noqa: E402
from service.ratings.outcomes import pairwise_games  # noqa: E402

CHUNK = 10  # matches per task, as in bench/bots.py
NEWTON_STEPS = 100
CONVERGED = 1e-12  # largest step, in Glicko-2 units, at which the fit stops


def play(task: tuple[str, tuple[tuple[str, ...], ...], int, list[int]]) -> Counter:
    """Matches ``numbers``: per (a, b) pair of levels, the games played and a's score summed,
    as Counter keys (a, b, "games") and (a, b, "score")."""
    variant, seatings, seed, numbers = task
    tally: Counter = Counter()
    choosers = {name: bench_bots.policy(name) for seating in seatings for name in seating}
    for number in numbers:
        names = seatings[number % len(seatings)]
        match, _ = rules.new_match(variant, list(names), rules.rules_for(variant), seed=f"{seed}:{number}")
        while not match.is_finished:
            seat = match.turn
            match, _ = rules.apply(match, seat, choosers[names[seat]](rules.observe(match, seat)))
        result = match.result
        games = pairwise_games(variant, result.winner, result.forfeit, [line.total for line in result.players])
        for seat, played in games.items():
            for opponent, score in played:
                if names[seat] < names[opponent]:  # each game once, keyed by its levels in name order
                    tally[names[seat], names[opponent], "games"] += 1
                    tally[names[seat], names[opponent], "score"] += score
    return tally


def tasks(variant: str, levels: list[str], matches: int, seed: int) -> list[tuple]:
    """Classic: one series per pair, seats swapped every other match; box: one series of the
    levels in their six seatings."""
    if variant == "box":
        series = [tuple(itertools.permutations(levels))]
    else:
        series = [((a, b), (b, a)) for a, b in itertools.combinations(levels, 2)]
    return [(variant, seatings, seed, list(range(start, min(start + CHUNK, matches))))
            for seatings in series for start in range(0, matches, CHUNK)]


def run(variant: str, levels: list[str], matches: int, processes: int, seed: int) -> Counter:
    work = tasks(variant, levels, matches, seed)
    total: Counter = Counter()
    with multiprocessing.Pool(processes) as pool:
        for done, tally in enumerate(pool.imap_unordered(play, work), start=1):
            total.update(tally)
            if done % 50 == 0 or done == len(work):
                print(f"{done}/{len(work)} tasks", file=sys.stderr, flush=True)  # progress: runs are long
    return total


def fit(levels: list[str], games: dict[tuple[str, str], float], scores: dict[tuple[str, str], float]) -> tuple[list[float], list[list[float]]]:
    """Maximum-likelihood Bradley-Terry strengths in Glicko-2 units (P(a beats b) = 1 / (1 +
    e^-(a - b)), draws half a win), centred on 0, and their covariance under that centring
    (the pseudo-inverse of the Fisher information). Newton's method with the first level held
    at 0. Raises ValueError when a level won or lost every game (no finite fit)."""
    n = len(levels)
    theta = [0.0] * n
    for _ in range(NEWTON_STEPS):
        gradient, information = _derivatives(levels, games, scores, theta)
        step = solve([row[1:] for row in information[1:]], gradient[1:])
        theta[1:] = [t + s for t, s in zip(theta[1:], step)]
        if max(map(abs, step)) < CONVERGED:
            break
    else:
        raise ValueError("the fit does not converge: some level won or lost every game")
    mean = sum(theta) / n
    _, information = _derivatives(levels, games, scores, theta)
    # Pseudo-inverse of a connected graph's Laplacian-like information L: (L + J/n)^-1 - J/n.
    shifted = inverse([[value + 1 / n for value in row] for row in information])
    covariance = [[value - 1 / n for value in row] for row in shifted]
    return [t - mean for t in theta], covariance


def _derivatives(levels, games, scores, theta):
    """The log-likelihood's gradient and the Fisher information at ``theta``."""
    n = len(levels)
    gradient = [0.0] * n
    information = [[0.0] * n for _ in range(n)]
    for (a, b), played in games.items():
        i, j = levels.index(a), levels.index(b)
        expected = 1 / (1 + math.exp(theta[j] - theta[i]))
        gradient[i] += scores[a, b] - played * expected
        gradient[j] -= scores[a, b] - played * expected
        weight = played * expected * (1 - expected)
        information[i][i] += weight
        information[j][j] += weight
        information[i][j] -= weight
        information[j][i] -= weight
    return gradient, information


def solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """x with matrix @ x = vector (Gauss-Jordan with partial pivoting; the matrices are tiny)."""
    n = len(vector)
    rows = [list(row) + [value] for row, value in zip(matrix, vector)]
    for column in range(n):
        pivot = max(range(column, n), key=lambda r: abs(rows[r][column]))
        rows[column], rows[pivot] = rows[pivot], rows[column]
        for r in range(n):
            if r != column:
                factor = rows[r][column] / rows[column][column]
                rows[r] = [x - factor * y for x, y in zip(rows[r], rows[column])]
    return [rows[r][n] / rows[r][r] for r in range(n)]


def inverse(matrix: list[list[float]]) -> list[list[float]]:
    n = len(matrix)
    columns = [solve(matrix, [float(r == c) for r in range(n)]) for c in range(n)]
    return [[columns[c][r] for c in range(n)] for r in range(n)]


def report(variant: str, levels: list[str], tally: Counter, anchor: tuple[str, float], matches: int,
           seed: int, processes: int, seconds: float) -> str:
    pairs = [(a, b) for a, b in itertools.combinations(sorted(levels), 2) if tally[a, b, "games"]]
    games = {pair: tally[(*pair, "games")] for pair in pairs}
    scores = {pair: tally[(*pair, "score")] for pair in pairs}
    theta, covariance = fit(levels, games, scores)
    anchor_level, anchor_rating = anchor
    a = levels.index(anchor_level)
    rating = {level: anchor_rating + SCALE * (theta[i] - theta[a]) for i, level in enumerate(levels)}
    centred_se = {level: SCALE * math.sqrt(covariance[i][i]) for i, level in enumerate(levels)}
    anchored_se = {level: SCALE * math.sqrt(max(0.0, covariance[i][i] + covariance[a][a] - 2 * covariance[i][a]))
                   for i, level in enumerate(levels)}
    expected = {(first, second): 1 / (1 + math.exp(-(rating[first] - rating[second]) / SCALE)) for first, second in pairs}
    # Pearson's chi-square of the fit: with more than chance disagreement between the pairs (the
    # levels not quite transitive), every standard error is widened by sqrt(chi-square / degrees
    # of freedom), as a quasi-likelihood fit does.
    chi_square = sum((scores[pair] - games[pair] * expected[pair]) ** 2 / (games[pair] * expected[pair] * (1 - expected[pair]))
                     for pair in pairs)
    freedom = len(pairs) - (len(levels) - 1)
    widening = math.sqrt(max(1.0, chi_square / freedom)) if freedom else 1.0
    rd = {level: math.ceil(widening * centred_se[level]) for level in levels}
    kind = "classic matches to 100" if variant == "classic" else "box matches (one seat per level, six seatings)"
    lines = [f"{matches} {kind} per series, default rules, seed {seed}, {processes} process(es), {seconds:.0f} s, "
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC.", "",
             "| pair (a vs b) | games | a's score (draws half) | rate, 95 % Wilson | the fit's expectation |",
             "|---|---|---|---|---|"]
    for pair in pairs:
        lines.append(f"| {pair[0]} vs {pair[1]} | {games[pair]} | {scores[pair]:g} "
                     f"| {bench_bots.percent(bench_bots.wilson(scores[pair], games[pair]))} | {100 * expected[pair]:.1f} % |")
    lines += ["", f"Pearson's chi-square {chi_square:.2f} on {freedom} degree(s) of freedom: standard errors x {widening:.2f}.",
              "", f"| level | rating ({anchor_level} = {anchor_rating:g}) | standard error, against the levels' mean "
                  f"| standard error, against {anchor_level} | RD (the first, widened, rounded up) |", "|---|---|---|---|---|"]
    for level in sorted(levels, key=rating.get):
        lines.append(f"| {level} | {rating[level]:.1f} | {centred_se[level]:.1f} | {anchored_se[level]:.1f} | {rd[level]} |")
    lines += ["", "BOT_RATINGS = {"]
    lines += [f'    "{level}": Rating({round(rating[level])}.0, {rd[level]}.0, 0.06),' for level in sorted(levels, key=rating.get)]
    lines.append("}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=3000, help="matches per pair (classic) or in all (box)")
    parser.add_argument("--variant", choices=["classic", "box"], default="classic")
    parser.add_argument("--levels", default="easy,standard,strong", help="comma-separated bot levels")
    parser.add_argument("--anchor", default="standard=1500", help="level=rating that fixes the scale")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--processes", type=int, default=1)
    args = parser.parse_args()
    levels = args.levels.split(",")
    for level in levels:
        bench_bots.policy(level)  # an unknown name fails here, before any match is played
    anchor_level, _, anchor_rating = args.anchor.partition("=")
    if anchor_level not in levels:
        parser.error(f"the anchor {anchor_level!r} is not one of the levels")
    if args.variant == "box" and len(levels) != 3:
        parser.error("a box match seats exactly three levels")
    started = time.perf_counter()
    tally = run(args.variant, levels, args.matches, args.processes, args.seed)
    print(report(args.variant, levels, tally, (anchor_level, float(anchor_rating)), args.matches, args.seed,
                 args.processes, time.perf_counter() - started))


if __name__ == "__main__":
    main()
