"""The consumers and timer handlers of one deployment, for whichever process runs them: the
``ginrummy worker`` on Redis, the service's own process on the embedded store."""
from __future__ import annotations

from service.background.runner import Consumer, Runner, RunnerSettings
from service.config import Config
from service.games import GameService
from service.matchmaking.setup import invites, quick_play
from service.ratings.applier import RatingsApplier
from service.ratings.bots import BOT_RATINGS
from service.streams.writer import StreamWriter
from service.store.areas import Areas
from service.store.timers import DEADLINE_TIMER, TimerCount

# On the embedded store the loop is woken by every change that concerns it, so a blocking read
# never needs to wait (service/background/in_process.py).
IN_PROCESS = RunnerSettings(block_seconds=0.0)


def background_runner(config: Config, games: GameService, areas: Areas,
                      settings: RunnerSettings = RunnerSettings(), count_timer: TimerCount | None = None,
                      read_elsewhere: tuple[str, ...] = (), deliveries: Consumer | None = None) -> Runner:
    """A runner (not started) of every consumer and timer of the service; ``count_timer``
    hears of each timer fired (the worker's metrics); ``read_elsewhere``: the groups of the
    feed's readers that run beside it (the worker's deliveries); ``deliveries``: the webhooks'
    consumer when the runner feeds it (the embedded store's, service/webhooks/local.py)."""
    consumers: list[Consumer] = [RatingsApplier(areas.ratings, games.note_rating_changes, BOT_RATINGS,
                                                config.glicko2()),
                                 StreamWriter(lambda: areas.streams)]
    if deliveries is not None:
        consumers.append(deliveries)
    quick, invited = quick_play(config, games, areas), invites(config, games, areas)
    handlers = {"ticket": quick.on_ticket_timer, "queue": quick.on_queue_timer, "invite": invited.on_timer,
                DEADLINE_TIMER: games.settle}
    return Runner(areas.feed, areas.timers, consumers, handlers, settings, count_timer=count_timer,
                  read_elsewhere=read_elsewhere)
