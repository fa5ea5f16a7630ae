"""Isolation: a token opens its own match only, and no response or log line gives away what
its reader may not know.

Hidden from a reader, at any moment of a hand: the cards of every other active hand that
have not been face up in this hand (the sitter of a box match may see the captain's), and
the stock. Face up in a hand: the upcard, every discard, and the knocker's melds and
deadwood once they are on the table. ``last_hand`` and the events of finished hands reveal
their hands by design and are left out of the scan, as are the events' deal records, which
must simply never carry the deck.
"""
from __future__ import annotations

import random
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest
import requests

from service import rules
from service.rules.cards import cards_of
from service.store import RedisStore
from tests.e2e.players import ApiClient, Game, Move, legal_move
from tests.e2e.stored_games import invariant_violations, load_game, untouched_marker

CARD_TOKEN = re.compile(r"(?<![A-Za-z0-9])[A2-9TJQK][cdhs](?![A-Za-z0-9])")
# Parts of an answer that are about finished hands (revealed by design) or are ids.
NOT_SCANNED = {"last_hand", "result", "id"}
MATCHES = 100
BOX_EVERY = 5  # one match in five is a three-player box match
PLAYERS = 4
# Short matches (mostly one or two hands) so that 100 of them fit in the test's time.
SHORT_MATCH = {"target_score": 10}
HINT_EVERY = 5


@pytest.mark.timeout(60)
def test_a_token_opens_only_its_own_match(service, truth) -> None:
    client = ApiClient(service.url)
    mine, theirs = client.create(seed=1), client.create(seed=2)
    view = client.mover_view(theirs)
    before = untouched_marker(truth, theirs.game_id)
    move = legal_move(view, random.Random(0))
    for token in mine.tokens:
        answers = [
            client.view(theirs.game_id, token),
            client.events(theirs.game_id, token),
            client.hint(theirs.game_id, token),
            client.act(theirs.game_id, token, move),
            client.act(theirs.game_id, token, Move("pass")),
        ]
        for answer in answers:
            assert answer.status_code == 401, (answer.request.url, answer.text)
            assert answer.json()["code"] == "unauthorized"
            assert "you" not in answer.json()
    client.close()
    assert untouched_marker(truth, theirs.game_id) == before


def face_up(events: list[rules.Event], number: int) -> set[str]:
    """The cards that have been face up in hand ``number``, from the events' public parts."""
    shown: set[str] = set()
    for event in events:
        if event.hand != number:
            continue
        public = event.public
        if event.type == "deal":
            shown.add(public["upcard"])
        elif event.type == "discard":
            shown.add(public["card"])
        elif event.type == "knock":
            shown.add(public["discard"])
            shown.update(card for meld in public["melds"] for card in meld)
            shown.update(public["deadwood_cards"])
    return shown


def hidden_from(match: rules.Match, events: list[rules.Event], viewer: int | None) -> set[str]:
    """The cards ``viewer`` (None: the public) may not know now."""
    hand = match.hand
    if hand is None:
        return set()
    hidden = {str(card) for card in hand.stock}
    for seat in hand.seats:
        if viewer is None or viewer not in match.watchers(seat):
            hidden |= {str(card) for card in cards_of(hand.holding(seat))}
    return hidden - face_up(events, hand.number)


def mentioned_cards(payload: object, current_hand: int | None) -> Iterator[str]:
    """Every card named anywhere in an answer (free text included), except in the parts
    about finished hands."""
    if isinstance(payload, dict):
        if payload.get("type") and "seq" in payload and payload.get("hand") != current_hand:
            return  # an event of another hand (or of none: the cut)
        for key, value in payload.items():
            if key not in NOT_SCANNED:
                yield from mentioned_cards(value, current_hand)
    elif isinstance(payload, list):
        for item in payload:
            yield from mentioned_cards(item, current_hand)
    elif isinstance(payload, str):
        yield from CARD_TOKEN.findall(payload)


@dataclass
class Watch:
    """One match played through HTTP, every answer checked against the stored truth."""

    client: ApiClient
    truth: RedisStore
    game: Game
    leaks: list[str]
    seen_after: dict[int | None, int] = field(default_factory=dict)
    match: rules.Match | None = None
    events: list[rules.Event] = field(default_factory=list)

    def refresh(self) -> None:
        stored = load_game(self.truth, self.game.game_id)
        self.match, self.events = stored.match, stored.events
        assert invariant_violations(stored) == [], self.game.game_id

    def check(self, response: requests.Response, viewer: int | None) -> dict:
        assert response.status_code == 200, (response.request.url, response.status_code, response.text)
        text = response.text
        for token in self.game.tokens:
            if token in text:
                self.leaks.append(f"{response.request.url}: a player token")
        body = response.json()
        current = self.match.hand.number if self.match.hand else None
        hidden = hidden_from(self.match, self.events, viewer)
        leaked = hidden.intersection(mentioned_cards(body, current))
        if leaked:
            self.leaks.append(f"{response.request.method} {response.request.url} as {viewer}: {sorted(leaked)}")
        for event in body.get("events", []):
            if "deck" in event:
                self.leaks.append(f"{response.request.url} as {viewer}: the deck of deal {event['hand']}")
        return body

    def look(self, viewer: int | None) -> None:
        """``viewer``'s view and the events they have not seen yet, in the current state."""
        token = None if viewer is None else self.game.tokens[viewer]
        self.check(self.client.view(self.game.game_id, token), viewer)
        page = self.check(self.client.events(self.game.game_id, token, self.seen_after.get(viewer, 0)), viewer)
        self.seen_after[viewer] = page["last_seq"]

    def play(self, rng: random.Random) -> None:
        """Play to the end; after each move one reader in turn (the public, then each seat)
        looks at the game, and every reader looks at the end."""
        readers = [None, *range(len(self.game.tokens))]
        self.refresh()
        moves = 0
        while not self.match.is_finished:
            mover = self.match.hand.turn
            token = self.game.tokens[mover]
            view = self.check(self.client.view(self.game.game_id, token), mover)
            if moves % HINT_EVERY == 0:
                self.check(self.client.hint(self.game.game_id, token), mover)
            sitter = self.match.sitter
            if sitter is not None and rng.random() < 0.2:
                advice = Move("advice", {"message": "think about the pile"})
                response = self.client.act(self.game.game_id, self.game.tokens[sitter], advice)
                self.refresh()
                self.check(response, sitter)
            response = self.client.act(self.game.game_id, token, legal_move(view, rng))
            self.refresh()
            self.check(response, mover)
            self.look(readers[moves % len(readers)])
            moves += 1
        for reader in readers:
            self.look(reader)


def play_matches(url: str, truth: RedisStore, seeds: list[int], leaks: list[str], tokens: set[str]) -> int:
    """Play one seeded match per seed (their tokens go to ``tokens``); the number of hands."""
    client = ApiClient(url)
    hands = 0
    try:
        for seed in seeds:
            variant = "box" if seed % BOX_EVERY == 0 else "classic"
            game = client.create(variant, seed=seed, rules=SHORT_MATCH)
            tokens.update(game.tokens)
            watch = Watch(client, truth, game, leaks)
            watch.play(random.Random(seed))
            hands += watch.match.deals
    finally:
        client.close()
    return hands


def log_leaks(log: str, tokens: set[str]) -> list[str]:
    """Log lines that hold a token or list cards (three or more)."""
    found = []
    for line in log.splitlines():
        if any(token in line for token in tokens):
            found.append(f"token in: {line[:300]}")
        elif len(CARD_TOKEN.findall(line)) >= 3:
            found.append(f"cards in: {line[:300]}")
    return found


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_no_answer_or_log_line_reveals_hidden_cards_or_tokens(start_gunicorn, redis_url, test_prefix, truth) -> None:
    # DEBUG: the most the service ever logs.
    server = start_gunicorn({"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix, "LOG_LEVEL": "DEBUG"}, workers=2)
    leaks: list[str] = []
    tokens: set[str] = set()
    seeds = list(range(1, MATCHES + 1))
    with ThreadPoolExecutor(PLAYERS) as pool:
        hands = sum(pool.map(lambda part: play_matches(server.url, truth, part, leaks, tokens),
                             [seeds[i::PLAYERS] for i in range(PLAYERS)]))
    assert leaks == []
    assert hands > MATCHES  # every match was played to its end, some over several hands
    server.stop()  # so that every line is in the log
    log = server.log_text()
    assert log.count('"logger": "ginrummy.access"') > 100 * MATCHES  # the log is really there
    assert log_leaks(log, tokens) == []
