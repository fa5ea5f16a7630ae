"""Quick play and invites built from the configuration (the HTTP app and the worker share this)."""
from __future__ import annotations

from service.config import Config
from service.games import GameService
from service.matchmaking.invites import Invites, InviteSettings
from service.matchmaking.pairing import GapSettings
from service.matchmaking.service import QuickPlay, QuickPlaySettings
from service.ratings.bots import BOT_RATINGS
from service.store.areas import Areas


def quick_play(config: Config, games: GameService, areas: Areas) -> QuickPlay:
    gaps = GapSettings(config.matchmaking_gap_initial, config.matchmaking_gap_per_second, config.matchmaking_gap_max)
    settings = QuickPlaySettings(config.matchmaking_ticket_seconds, max_open_tickets=config.matchmaking_max_open_tickets,
                                 gaps=gaps)
    return QuickPlay(games.ctx, lambda: areas.tickets, lambda: areas.timers, lambda: areas.ratings, BOT_RATINGS,
                     config.glicko2(), settings)


def invites(config: Config, games: GameService, areas: Areas) -> Invites:
    settings = InviteSettings(config.invite_max_open, accepts_per_minute=config.invite_accepts_per_minute)
    return Invites(games.ctx, lambda: areas.invites, lambda: areas.timers, settings)
