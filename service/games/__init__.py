"""The use cases of the service (see ``service.py``), and what they take and give."""
from service.games.commit import Reply, Retry, request_fingerprint
from service.games.context import Context, Metrics, Settings
from service.games.create import Caller, Created, NewGame, NewSeat, SeatToken
from service.games.errors import (ConcurrentChange, NotAllowed, PreconditionFailed, TooMany, Unauthorized,
                                  Unprocessable)
from service.games.service import GameService, analyze_hand

__all__ = [
    "Reply", "Retry", "request_fingerprint", "Context", "Metrics", "Settings", "Caller", "Created", "NewGame",
    "NewSeat", "SeatToken", "ConcurrentChange", "NotAllowed", "PreconditionFailed", "TooMany", "Unauthorized",
    "Unprocessable", "GameService", "analyze_hand",
]
