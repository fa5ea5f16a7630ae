"""docs/fairness.md, "What stays secret": until a match is over, nothing the service says reveals
its server seed or lets anyone compute a card to come. Whole matches of both variants are
played through HTTP with a webhook callback; every answer, every event page of every viewer,
every webhook body and every log line is searched for the seed (hex in either case, Base64 of
its text and of its bytes), the first HMAC block of every deck, and the order of every deck
not dealt yet. The record of the finished match reveals the seed: the search finds it there."""
from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re

import pytest
from redis import Redis

from service.rules.deals import cut_label, deal_label, derive_deck
from tests.api.conftest import build_app
from service.store.keys import game_keys
from tests.api.support import Table, play_one, store_of

CALLBACK = "http://127.0.0.1:9"
PLAYERS = {
    "classic": [{"name": "Ann"}, {"name": "Robo", "bot": True, "level": "easy"}],
    "box": [{"name": "Ann"}, {"name": "Bob"}, {"name": "Robo", "bot": True, "level": "strong"}],
}
CARD = re.compile(r"[A2-9TJQK][cdhs]")
DECK_PREFIX = 6  # cards of a deck, in its order, that would give its deal away
LATER_DEALS = 40  # more than any of these matches has


def seed_forms(seed: str) -> list[str]:
    raw = bytes.fromhex(seed)
    return [seed, seed.upper()] + [encode(data).decode().rstrip("=") for data in (raw, seed.encode())
                                   for encode in (base64.b64encode, base64.urlsafe_b64encode)]


def blocks(seed: str, client_seed: str) -> list[str]:
    labels = [cut_label(n) for n in range(1, 6)] + [deal_label(n) for n in range(1, LATER_DEALS)]
    return [hmac.new(seed.encode(), f"{client_seed}:{label}:0".encode(), hashlib.sha256).hexdigest()
            for label in labels]


def deck_orders(seed: str, client_seed: str, after_hand: int) -> list[list[str]]:
    """The first cards of every deck dealt after hand ``after_hand``, in deck order."""
    return [[str(c) for c in derive_deck(seed, client_seed, deal_label(n))[:DECK_PREFIX]]
            for n in range(after_hand + 1, LATER_DEALS)]


def leaks(text: str, seed: str, client_seed: str, hand: int) -> list[str]:
    """What of the secrets ``text``, said while hand ``hand`` was being played, gives away."""
    found = [form for form in seed_forms(seed) + blocks(seed, client_seed) if form in text]
    said = " ".join(CARD.findall(text))
    found += [" ".join(order) for order in deck_orders(seed, client_seed, hand) if " ".join(order) in said]
    return found


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(PLAYERS))
def test_nothing_reveals_the_server_seed_or_a_deck_to_come_before_the_end(variant, caplog, redis_url, key_prefix):
    caplog.set_level(logging.DEBUG)
    # On Redis with no worker: every delivery stays in the feed, where the search reads it.
    app = build_app(REDIS_URL=redis_url, KEY_PREFIX=key_prefix, WEBHOOK_ALLOWED_HOSTS=CALLBACK, LOG_LEVEL="DEBUG")
    client = app.test_client()
    client_seed = "scan me"
    table = Table.open(app, client, variant, players=PLAYERS[variant], client_seed=client_seed,
                       callback_url=f"{CALLBACK}/hooks")
    seed = table.match().server_seed
    viewers = [None] + [seat for seat, token in enumerate(table.tokens) if token]
    said: list[tuple[int, str]] = []  # (the hand being played, what was said)
    last_seen = {viewer: 0 for viewer in viewers}
    while True:
        # What is said during a turn is checked against the decks after the hand being played
        # then (the answer that deals the next hand shows its cards, never in the deck's order).
        hand = table.match().deals
        if table.view()["status"] != "active":
            break
        assert play_one(table).status_code == 200
        for viewer in viewers:
            page = table.get(viewer, "/events", after=last_seen[viewer]).get_json()
            last_seen[viewer] = page["last_seq"]
        said += [(hand, response.get_data(as_text=True)) for _, _, response in table.responses]
        table.responses.clear()
    match = table.match()
    for viewer in viewers:
        said.append((match.deals, table.get(viewer, "/events").get_data(as_text=True)))
        said.append((match.deals, table.get(viewer).get_data(as_text=True)))
    with Redis.from_url(redis_url, decode_responses=True) as redis_client:
        webhooks = [fields["body"] for _, fields in redis_client.xrange(game_keys(key_prefix, table.game_id).feed)
                    if fields["subject"] == table.game_id and fields["url"]]
    assert webhooks and any('"match_over"' in body for body in webhooks)
    assert len(said) > 100
    for hand, text in said:
        assert leaks(text, seed, client_seed, hand) == [], text[:200]
    for body in webhooks:
        assert leaks(body, seed, client_seed, match.deals) == [], body[:200]
    assert leaks(caplog.text, seed, client_seed, match.deals) == []
    # Once the match is over, the record reveals the seed: the search above would have found it.
    record = table.get(None, "/record").get_data(as_text=True)
    assert seed in leaks(record, seed, client_seed, match.deals)
    store_of(app).close()
