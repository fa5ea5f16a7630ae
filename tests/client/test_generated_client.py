"""A client generated from the checked-in document, as an integrator would make it: generated
cleanly by openapi-python-client, type-checked with ``mypy --strict``, and able to play matches
to the end against the real service on its own (typed models in, typed models out).
"""
from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.client.served import REPO, Served, running

pytestmark = pytest.mark.slow

DOCUMENT = REPO / "openapi" / "openapi.json"
PACKAGE = "ginrummy_client"
# The generator's own defaults, less the formatters it runs afterwards (ruff), which are not
# part of what it generates.
CONFIG = "post_hooks: []\n"
# Union members the generator names itself when a schema is not a plain reference.
FALLBACK_MODEL = re.compile(r"_type_\d")
MOVES_MAX = 3000
SEED = 7


def tool(name: str) -> str:
    return str(Path(sys.executable).parent / name)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated package's folder (its parent goes on sys.path)."""
    root = tmp_path_factory.mktemp("client")
    config = root / "config.yaml"
    config.write_text(CONFIG)
    run = subprocess.run([tool("openapi-python-client"), "generate", "--path", str(DOCUMENT), "--meta", "none",
                          "--output-path", str(root / PACKAGE), "--config", str(config)],
                         capture_output=True, text=True, timeout=300)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "warning" not in output.lower() and "error" not in output.lower(), output
    return root / PACKAGE


def test_no_model_is_an_anonymous_fallback(generated):
    models = sorted(path.stem for path in (generated / "models").glob("*.py") if path.stem != "__init__")
    print(f"{len(models)} generated models")
    assert [name for name in models if FALLBACK_MODEL.search(name)] == []
    # The vocabulary is one type each, and every event type has its model.
    assert {"draw_source", "phase", "role", "outcome", "turn_action", "match_status", "metadata"} <= set(models)
    assert {"draw_event", "hand_scored_event", "match_finished_event"} <= set(models)


def test_it_passes_mypy_strict(generated, tmp_path):
    run = subprocess.run([tool("mypy"), "--strict", "--cache-dir", str(tmp_path / "mypy"), str(generated)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-2000:]


@pytest.fixture(scope="module")
def client(generated: Path) -> ModuleType:
    sys.path.insert(0, str(generated.parent))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(generated.parent))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
            del sys.modules[name]


class Player:
    """Plays matches through the generated client only."""

    def __init__(self, client: ModuleType, url: str):
        self.c = client
        self.api = importlib.import_module(f"{PACKAGE}.api.games")
        self.models = importlib.import_module(f"{PACKAGE}.models")
        self.url = url
        self.public = client.Client(base_url=url, raise_on_unexpected_status=True)

    def as_seat(self, token: str):
        return self.c.AuthenticatedClient(base_url=self.url, token=token, raise_on_unexpected_status=True)

    def create(self, body) -> tuple[str, list]:
        create_game = importlib.import_module(f"{PACKAGE}.api.games.create_game")
        created = create_game.sync(client=self.public, body=body)
        assert isinstance(created, self.models.CreatedGame), created
        return created.game.id, [self.as_seat(p.token) if isinstance(p.token, str) else None
                                 for p in created.players]

    def call(self, operation: str, **kwargs):
        return importlib.import_module(f"{PACKAGE}.api.games.{operation}").sync(**kwargs)

    def play_to_the_end(self, game_id: str, seats: list) -> object:
        m = self.models
        for _ in range(MOVES_MAX):
            public = self.call("get_game", game_id=game_id, client=self.public)
            assert isinstance(public, m.GameView), public
            if public.status == m.MatchStatus.FINISHED:
                return public
            hand = public.hand
            assert isinstance(hand, m.Hand)
            seat = seats[hand.turn]
            you = self.call("get_game", game_id=game_id, client=seat).you
            assert isinstance(you, m.You) and you.legal_actions, you
            if hand.phase == m.Phase.UPCARD_OFFER:
                answer = self.call("pass_", game_id=game_id, client=seat)
            elif hand.phase == m.Phase.DRAW:
                answer = self.call("draw", game_id=game_id, client=seat, body=m.DrawRequest(source=m.DrawSource.STOCK))
            elif hand.phase == m.Phase.LAYOFF:
                dry = self.call("dry_run_layoff", game_id=game_id, client=seat, body=m.LayoffRequest())
                assert isinstance(dry, m.DryRunLayoff) and isinstance(dry.outcome, m.Outcome), dry
                answer = self.call("layoff", game_id=game_id, client=seat, body=m.LayoffRequest())
            elif you.can_knock:
                answer = self.call("knock", game_id=game_id, client=seat, body=m.KnockRequest(discard=you.best_discard))
            else:
                answer = self.call("discard", game_id=game_id, client=seat,
                                   body=m.DiscardRequest(card=you.best_discard))
            assert isinstance(answer, m.GameView), answer
        raise AssertionError(f"{game_id} did not finish in {MOVES_MAX} moves")

    def check_events(self, game_id: str, seat) -> None:
        m = self.models
        page = self.call("list_events", game_id=game_id, client=seat)
        assert isinstance(page, m.EventPage) and page.events
        for event in page.events:
            # Each event was parsed into the model of its type.
            assert type(event).__name__ == "".join(p.capitalize() for p in event.type_.value.split("_")) + "Event"
        kinds = {event.type_.value for event in page.events}
        assert {"cut", "deal", "dealt", "draw", "discard", "knock", "layoff", "hand_scored", "match_finished"} <= kinds
        scored = [event for event in page.events if isinstance(event, m.HandScoredEvent)]
        assert all(isinstance(event.outcome, m.Outcome) for event in scored)


@pytest.mark.parametrize("variant", ["classic", "box"])
def test_a_match_played_to_the_end_through_the_generated_client(client, service: Served, variant):
    player = Player(client, service.url)
    m = player.models
    names = ["Ann", "Bob", "Cy"][: 2 if variant == "classic" else 3]
    players = [m.NewPlayerRequest(name=name) for name in names]
    rules = m.RulesRequest(target_score=10)
    # Seeded (and the server's secret fixed, tests/client/conftest.py): a short match of other
    # cards can end at the first knock, before anyone discards.
    body = (m.ClassicGameRequest(variant=m.ClassicGameRequestVariant.CLASSIC, players=players, rules=rules,
                                 seed=SEED)
            if variant == "classic" else
            m.BoxGameRequest(variant=m.BoxGameRequestVariant.BOX, players=players, rules=rules, seed=SEED))
    game_id, seats = player.create(body)
    hint = player.call("get_hint", game_id=game_id, client=seats[0])
    assert isinstance(hint, m.Hint)
    finished = player.play_to_the_end(game_id, seats)
    assert isinstance(finished.result, m.Result) and finished.hand is None
    assert isinstance(finished.last_hand, m.LastHand) and isinstance(finished.last_hand.outcome, m.Outcome)
    player.check_events(game_id, seats[0])
    again = player.call("rematch", game_id=game_id, client=seats[0])
    assert isinstance(again, m.CreatedGame) and again.game.id != game_id
    refused = player.call("draw", game_id=game_id, client=seats[0], body=m.DrawRequest(source=m.DrawSource.STOCK))
    assert isinstance(refused, m.Problem) and refused.code == "game_finished"
    analyze = importlib.import_module(f"{PACKAGE}.api.hands.analyze_hand")
    analysis = analyze.sync(client=player.public, body=m.AnalyzeRequest(cards=["As", "2s", "3s", "7d", "7c", "7h",
                                                                              "Td", "Jd", "Qd", "4c"]))
    assert isinstance(analysis, m.Analysis) and analysis.deadwood == 4


def test_api_key_operations_through_the_generated_client(client, tmp_path):
    # The generator knows one credential per client: the API key goes in as a token sent in
    # X-API-Key without a prefix, as docs/api.md shows.
    key = "generated-client-key"
    with running(tmp_path, API_KEYS=key) as keyed:
        player = Player(client, keyed.url)
        m = player.models
        integrator = client.AuthenticatedClient(base_url=keyed.url, token=key, prefix="", auth_header_name="X-API-Key",
                                                raise_on_unexpected_status=True)
        create_game = importlib.import_module(f"{PACKAGE}.api.games.create_game")
        body = m.ClassicGameRequest(variant=m.ClassicGameRequestVariant.CLASSIC,
                                    players=[m.NewPlayerRequest(name="Ann", external_id="user-1"),
                                             m.NewPlayerRequest(name="Bob")])
        created = create_game.sync(client=integrator, body=body)
        assert isinstance(created, m.CreatedGame), created
        game_id = created.game.id
        listed = importlib.import_module(f"{PACKAGE}.api.players.list_player_games").sync(
            external_id="user-1", client=integrator)
        assert [game.id for game in listed.games] == [game_id]
        reissued = player.call("reissue_token", game_id=game_id, seat=1, client=integrator)
        assert reissued.seat == 1 and reissued.token != created.players[1].token
        aborted = player.call("abort", game_id=game_id, client=integrator)
        assert isinstance(aborted, m.GameView) and aborted.status == m.MatchStatus.ABORTED
        # Without the key, the same call is a typed 401 problem.
        refused = player.call("abort", game_id=game_id, client=player.as_seat("not-a-key"))
        assert isinstance(refused, m.Problem) and refused.code == "unauthorized"


def test_an_event_of_a_type_added_later_is_parsed_not_fatal(client):
    """docs/api.md: skip event types you do not know. The page holding one still parses, the
    known events into their models and the new one into OtherEvent."""
    m = importlib.import_module(f"{PACKAGE}.models")
    draw = {"seq": 8, "type": "draw", "seat": 0, "hand": 1, "turn": 0, "bot": False, "source": "stock", "card": None}
    later = {"seq": 9, "type": "a_later_type", "seat": None, "hand": 1, "turn": 0, "bot": False, "more": [1, 2]}
    page = m.EventPage.from_dict({"events": [draw, later], "last_seq": 9})
    assert [type(event).__name__ for event in page.events] == ["DrawEvent", "OtherEvent"]
    assert page.events[1].type_ == "a_later_type" and page.events[1]["more"] == [1, 2]
