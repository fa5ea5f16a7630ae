"""What the routes of one app share: its configuration, store and use cases."""
from __future__ import annotations

from dataclasses import dataclass

from flask import current_app

from service.config import Config
from service.games import GameService
from service.matchmaking.invites import Invites
from service.matchmaking.service import QuickPlay
from service.ratings.service import RatingService
from service.streams.reader import KeyStreamReader
from service.store.base import GameStore

EXTENSION = "ginrummy"


@dataclass(frozen=True)
class ServiceContext:
    config: Config
    store: GameStore
    games: GameService
    ratings: RatingService
    quick_play: QuickPlay
    invites: Invites
    key_streams: KeyStreamReader


def current() -> ServiceContext:
    """The context of the app handling this request (set up by ``create_app``)."""
    return current_app.extensions[EXTENSION]
