"""A match played through HTTP by its people against its bots, with every answer checked.

``Session`` creates a match (any seat may be a bot), plays the people's moves from their
views, and after every request replays the stored event log (``checks.LogReplay``) and scans
the answer, and each viewer's new events, for cards that viewer may not know.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from service import rules
from tests.api.checks import HiddenCards, LogReplay, person_move, stored_match
from tests.api.support import store_of

MAX_REQUESTS = 4000


def seats_of(names_and_levels: list[tuple[str, str | None]]) -> list[dict]:
    """Creation entries: a level makes the seat a bot of that level."""
    return [{"name": name} if level is None else {"name": name, "bot": True, "level": level}
            for name, level in names_and_levels]


@dataclass
class Session:
    app: Flask
    client: FlaskClient
    game_id: str
    tokens: list[str | None]
    levels: list[str | None]
    created: dict
    replay: LogReplay
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    truth: dict[int, rules.Event] = field(default_factory=dict)
    seen: dict[int | None, int] = field(default_factory=dict)  # last event seq each viewer read
    last_move: tuple[str, dict | None] | None = None
    requests: int = 0

    @classmethod
    def open(cls, app: Flask, variant: str, seats: list[tuple[str, str | None]], **extra) -> Session:
        client = app.test_client()
        response = client.post("/v1/games", json={"variant": variant, "players": seats_of(seats), **extra})
        assert response.status_code == 201, response.get_json()
        body = response.get_json()
        levels = [level for _, level in seats]
        session = cls(app, client, body["game"]["id"], [p["token"] for p in body["players"]], levels, body,
                      LogReplay(levels, body["game"]["rules"]["knock_limit"]))
        session.sync()
        session.check_view(body["game"], None, "the creation's answer")
        return session

    @property
    def people(self) -> list[int]:
        return [seat for seat, level in enumerate(self.levels) if level is None]

    def auth(self, seat: int | None) -> dict:
        return {} if seat is None else {"Authorization": f"Bearer {self.tokens[seat]}"}

    # --- requests ----------------------------------------------------------------------------
    def get(self, seat: int | None, suffix: str = "", **query) -> TestResponse:
        self.requests += 1
        return self.client.get(f"/v1/games/{self.game_id}{suffix}", headers=self.auth(seat), query_string=query)

    def post(self, seat: int | None, action: str, body: dict | None = None, headers: dict | None = None) -> TestResponse:
        self.requests += 1
        kwargs = {} if body is None else {"json": body}
        return self.client.post(f"/v1/games/{self.game_id}/{action}", headers={**self.auth(seat), **(headers or {})},
                                **kwargs)

    def view(self, seat: int | None) -> dict:
        response = self.get(seat)
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    # --- the truth and the checks -----------------------------------------------------------
    def sync(self) -> list[rules.Event]:
        """Replay the events stored since the last call; returns them."""
        new = [rules.decode_event(text) for text in store_of(self.app).events(self.game_id, self.replay.seq)]
        self.replay.check(new)
        self.truth.update((event.seq, event) for event in new)
        return new

    def match(self) -> rules.Match:
        return stored_match(store_of(self.app), self.game_id)

    def hidden(self) -> HiddenCards:
        return HiddenCards(self.match(), self.replay)

    def check_players(self, view: dict) -> None:
        """Every view names the bots and their levels."""
        assert [(p["bot"], p["level"]) for p in view["players"]] == [(lv is not None, lv) for lv in self.levels]

    def check_view(self, view: dict, seat: int | None, what: str) -> None:
        self.check_players(view)
        self.hidden().assert_view_clean(view, seat, what)

    def check_events(self, seat: int | None) -> list[dict]:
        """Read the viewer's new events and scan them; returns them."""
        page = self.get(seat, "/events", after=self.seen.get(seat, 0))
        assert page.status_code == 200
        shown = page.get_json()["events"]
        self.hidden().assert_events_clean(shown, self.truth, seat, f"events of seat {seat}")
        if shown:
            self.seen[seat] = shown[-1]["seq"]
        assert all("turn" in event for event in shown)
        return shown

    # --- playing -----------------------------------------------------------------------------
    def to_act(self) -> int | None:
        match = self.match()
        return match.turn

    def play_move(self, seat: int, headers: dict | None = None) -> TestResponse:
        """The person ``seat`` plays a move chosen from their view; the answer is checked."""
        view = self.view(seat)
        self.check_view(view, seat, "the view before a move")
        hint = self.get(seat, "/hint")
        assert hint.status_code == 200, hint.get_json()
        self.hidden().assert_view_clean(hint.get_json(), seat, "a hint")
        chosen = person_move(view, self.rng)
        assert chosen is not None, f"seat {seat} has nothing to do: {view['you']}"
        self.last_move = chosen
        response = self.post(seat, *chosen, headers=headers)
        assert response.status_code == 200, (chosen, response.get_json())
        self.sync()
        answer = response.get_json()
        self.check_view(answer, seat, f"the answer to {chosen}")
        # The answer already holds every bot's reply: it is a person's turn, or the match is over.
        match = self.match()
        assert answer["version"] == match.version
        assert match.is_finished or match.turn in self.people, "the answer left a bot to move"
        return response

    def play_until(self, done, limit: int = 600) -> None:
        """Play the people's moves until ``done()`` holds. Raises AssertionError if it never does."""
        for _ in range(limit):
            if done():
                return
            seat = self.to_act()
            assert seat is not None, "the match ended first"
            self.play_move(seat)
        raise AssertionError("the condition was never reached")

    def play_to_the_end(self, scan_every: int = 1) -> dict:
        """Play the people's moves until the match is over; returns the final public view."""
        moves = 0
        while True:
            assert self.requests < MAX_REQUESTS, "the match does not end"
            seat = self.to_act()
            if seat is None:
                break
            self.play_move(seat)
            moves += 1
            if moves % scan_every == 0:
                for viewer in [None, *self.people]:
                    self.check_events(viewer)
        final = self.view(None)
        self.check_players(final)
        assert final["status"] == "finished" and final["hand"] is None
        for viewer in [None, *self.people]:
            self.check_events(viewer)
        return final
