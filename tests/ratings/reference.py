"""Glicko-2 written again for the tests, straight from Mark Glickman's "Example of the Glicko-2
system" (steps 1 to 8, the Illinois algorithm of step 5), without looking at how the service
computes it: the service's figures are checked against these.

Also the rules that turn a finished match into games (as the contract and the service's docs
state them), and a ledger of what every player's standing must be after a sequence of rated
matches.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

GLICKO_SCALE = 173.7178
TAU = 0.5
EPSILON = 0.000001
NEW = (1500.0, 350.0, 0.06)
PROVISIONAL_ABOVE_RD = 110.0


def glicko2(rating: float, rd: float, volatility: float, games: list[tuple[float, float, float]],
            tau: float = TAU, epsilon: float = EPSILON) -> tuple[float, float, float]:
    """(r', RD', sigma') of a player after one rating period; ``games`` holds
    (opponent's rating, opponent's RD, score) per game, the opponents as they were before it."""
    # Step 2: to the Glicko-2 scale.
    mu = (rating - 1500) / GLICKO_SCALE
    phi = rd / GLICKO_SCALE
    opponents = [((r - 1500) / GLICKO_SCALE, d / GLICKO_SCALE, s) for r, d, s in games]

    def g(phi_j: float) -> float:
        return 1 / math.sqrt(1 + 3 * phi_j ** 2 / math.pi ** 2)

    def e(mu_j: float, phi_j: float) -> float:
        return 1 / (1 + math.exp(-g(phi_j) * (mu - mu_j)))

    # Step 3: the estimated variance v.
    v = 1 / sum(g(phi_j) ** 2 * e(mu_j, phi_j) * (1 - e(mu_j, phi_j)) for mu_j, phi_j, _ in opponents)
    # Step 4: the estimated improvement delta.
    improvement = sum(g(phi_j) * (s - e(mu_j, phi_j)) for mu_j, phi_j, s in opponents)
    delta = v * improvement
    # Step 5: the new volatility.
    a = math.log(volatility ** 2)

    def f(x: float) -> float:
        return (math.exp(x) * (delta ** 2 - phi ** 2 - v - math.exp(x)) / (2 * (phi ** 2 + v + math.exp(x)) ** 2)
                - (x - a) / tau ** 2)

    big_a = a
    if delta ** 2 > phi ** 2 + v:
        big_b = math.log(delta ** 2 - phi ** 2 - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k = k + 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    while abs(big_b - big_a) > epsilon:
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a = f_a / 2
        big_b, f_b = big_c, f_c
    new_volatility = math.exp(big_a / 2)
    # Step 6: the pre-rating-period value.
    phi_star = math.sqrt(phi ** 2 + new_volatility ** 2)
    # Step 7: the new rating deviation and rating.
    new_phi = 1 / math.sqrt(1 / phi_star ** 2 + 1 / v)
    new_mu = mu + new_phi ** 2 * improvement
    # Step 8: back to the displayed scale.
    return GLICKO_SCALE * new_mu + 1500, GLICKO_SCALE * new_phi, new_volatility


def seat_scores(variant: str, winner: int, forfeit: int | None,
                totals: list[int]) -> dict[int, list[tuple[int, float]]]:
    """Per seat, (opponent seat, score) of each game the match counts as: classic, the winner 1
    and the loser 0; box, every pair one game by the final totals (equal: 0.5 each); a
    resigning seat loses to every other seat."""
    seats = range(len(totals))
    games: dict[int, list[tuple[int, float]]] = {seat: [] for seat in seats}
    for first in seats:
        for second in seats:
            if first == second:
                continue
            if forfeit in (first, second):
                score = 0.0 if forfeit == first else 1.0
            elif variant == "classic":
                score = 1.0 if winner == first else 0.0
            elif totals[first] == totals[second]:
                score = 0.5
            else:
                score = 1.0 if totals[first] > totals[second] else 0.0
            games[first].append((second, score))
    return games


@dataclass(frozen=True)
class Expected:
    """A player's standing as it must be: figures, record and history (newest last)."""

    external_id: str
    name: str
    rating: float = NEW[0]
    rd: float = NEW[1]
    volatility: float = NEW[2]
    games: int = 0
    wins: int = 0
    losses: int = 0
    draws: int = 0
    history: tuple[tuple[str, float, float, float], ...] = ()  # (game id, rating, rd, delta)

    @property
    def provisional(self) -> bool:
        return self.rd > PROVISIONAL_ABOVE_RD


@dataclass
class Ledger:
    """Every player's expected standing per (scope, variant), from the finished matches' views."""

    bots: dict[str, tuple[float, float]]  # level -> (rating, RD), fixed
    players: dict[tuple[str, str, str], Expected] = field(default_factory=dict)

    def standing(self, scope: str, variant: str, external_id: str) -> Expected | None:
        return self.players.get((scope, variant, external_id))

    def rate(self, scope: str, view: dict) -> list[dict]:
        """Apply the finished match ``view`` (public view); returns its expected rating changes,
        as ``result.rating_changes`` shows them."""
        variant, result = view["variant"], view["result"]
        totals = [line["total"] for line in sorted(result["players"], key=lambda line: line["seat"])]
        if result["winner"] is None:
            return []
        games = seat_scores(variant, result["winner"], result["forfeit"], totals)
        before = {}
        for player in view["players"]:
            if player["bot"]:
                before[player["seat"]] = (*self.bots[player["level"]], None)
            else:
                found = self.standing(scope, variant, player["external_id"])
                found = found or Expected(player["external_id"], player["name"])
                before[player["seat"]] = (found.rating, found.rd, found)
        changes = []
        for player in view["players"]:
            if player["bot"]:
                continue
            seat = player["seat"]
            rating, rd, old = before[seat]
            played = [(before[opponent][0], before[opponent][1], score) for opponent, score in games[seat]]
            new_rating, new_rd, new_volatility = glicko2(rating, rd, old.volatility, played)
            wins = sum(score == 1.0 for _, score in games[seat])
            draws = sum(score == 0.5 for _, score in games[seat])
            delta = new_rating - rating
            self.players[(scope, variant, old.external_id)] = replace(
                old, name=player["name"], rating=new_rating, rd=new_rd, volatility=new_volatility,
                games=old.games + len(played), wins=old.wins + wins, draws=old.draws + draws,
                losses=old.losses + len(played) - wins - draws,
                history=(*old.history, (view["id"], new_rating, new_rd, delta)))
            changes.append({"seat": seat, "external_id": old.external_id, "before": rating, "after": new_rating,
                            "delta": delta, "rd": new_rd, "volatility": new_volatility})
        return changes

    def board(self, scope: str, variant: str) -> list[Expected]:
        """The players who must be on the leaderboard, best first."""
        return sorted((standing for (s, v, _), standing in self.players.items()
                       if s == scope and v == variant and not standing.provisional),
                      key=lambda standing: -standing.rating)

    def rank(self, scope: str, variant: str, external_id: str) -> int | None:
        ranked = [standing.external_id for standing in self.board(scope, variant)]
        return ranked.index(external_id) + 1 if external_id in ranked else None
