"""/watch/{id} as a spectator sees it, in headless Chromium: the page draws the public table from
the match's stream (EventSource) and shows each move within a second of it being made; it
shows every seat's name, score and hand as card backs, and never a card that is not on the
table for everyone; the end of the match shows who won. No request leaves the service, the
console shows no error and no Content-Security-Policy violation. Screenshots of the page on a
desktop and a phone are kept under the test's temporary folder (their paths are printed).
"""
from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests

from tests.browser.test_docs_page import CSP_LISTENER, FLAGS, TIMEOUT_MS, chromium  # noqa: F401 - a fixture
from tests.client.served import Served, running

pytestmark = pytest.mark.slow

SHOWN_WITHIN_SECONDS = 1.0
DESKTOP = {"width": 1366, "height": 860}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with running(tmp_path_factory.mktemp("serve"), STREAM_HEARTBEAT_SECONDS="2") as served:
        yield served


class Match:
    """A classic match between two people, played over HTTP."""

    def __init__(self, url: str) -> None:
        self.url = url
        created = requests.post(f"{url}/v1/games", timeout=5, json={
            "variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}], "seed": 12})
        assert created.status_code == 201, created.text
        self.id = created.json()["game"]["id"]
        self.tokens = [player["token"] for player in created.json()["players"]]

    def view(self, seat: int | None = None) -> dict:
        headers = {} if seat is None else {"Authorization": f"Bearer {self.tokens[seat]}"}
        return requests.get(f"{self.url}/v1/games/{self.id}", headers=headers, timeout=5).json()

    def act(self, seat: int, action: str, body: dict | None = None) -> dict:
        answer = requests.post(f"{self.url}/v1/games/{self.id}/{action}", json=body, timeout=5,
                               headers={"Authorization": f"Bearer {self.tokens[seat]}"})
        assert answer.status_code == 200, answer.text
        return answer.json()

    def draw(self) -> int:
        """The seat to act takes a card (the upcard offer passed); returns that seat."""
        public = self.view()
        seat = public["hand"]["turn"]
        if public["hand"]["phase"] == "upcard_offer":
            self.act(seat, "pass")
            return self.draw()
        self.act(seat, "draw", {"source": "stock"})
        return seat


def public_cards(view: dict) -> set[str]:
    """The cards a spectator may see now: the discard pile and a knock on the table."""
    hand = view["hand"] or {}
    shown = set(hand.get("discard_pile", []))
    knock = hand.get("knock")
    if knock:
        shown |= {card for meld in knock["melds"] for card in meld} | set(knock["deadwood_cards"])
    return shown


def test_the_watch_page_shows_each_move_within_a_second(chromium, service: Served, tmp_path):  # noqa: F811
    from playwright.sync_api import sync_playwright

    match = Match(service.url)
    requests_seen: list[str] = []
    console_errors: list[str] = []
    delays: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=FLAGS)
        try:
            page = browser.new_page(viewport=DESKTOP)
            page.set_default_timeout(TIMEOUT_MS)
            page.add_init_script(CSP_LISTENER)
            page.on("request", lambda request: requests_seen.append(request.url))
            page.on("console", lambda message: console_errors.append(message.text)
                    if message.type == "error" else None)
            page.on("pageerror", lambda error: console_errors.append(str(error)))
            page.goto(f"{service.url}/watch/{match.id}")
            page.locator(".seat").first.wait_for()
            assert page.locator("#status").inner_text() == "live"
            names = page.locator(".seat .name").all_inner_texts()
            assert sorted(names) == ["Ann", "Bob"]
            for _ in range(6):
                seat = match.draw()
                card = match.view(seat)["you"]["best_discard"]
                match.act(seat, "discard", {"card": card})
                answered = time.monotonic()
                page.locator(f'#discard .card[data-card="{card}"]').wait_for(timeout=SHOWN_WITHIN_SECONDS * 1000 + 500)
                delays.append(time.monotonic() - answered)
                public = match.view()
                face_up = set(page.eval_on_selector_all(".card[data-card]", "cards => cards.map(c => c.dataset.card)"))
                assert face_up <= public_cards(public), face_up - public_cards(public)
                backs = [page.locator(f'.seat[data-seat="{s}"] .hand .card.back').count() for s in (0, 1)]
                assert backs == [public["hand"]["hand_sizes"][str(s)] for s in (0, 1)]
                label = page.locator(f'#discard .card[data-card="{card}"]').get_attribute("aria-label")
                latest = page.locator(".log li").all_inner_texts()[:3]  # a presence change may follow
                assert any(line.endswith("discards " + label) for line in latest), latest
            desktop = tmp_path / "watch-desktop.png"
            page.screenshot(path=str(desktop), full_page=True)
            phone_page = browser.new_page(viewport=PHONE)
            phone_page.goto(f"{service.url}/watch/{match.id}")
            phone_page.locator(".seat").first.wait_for()
            phone = tmp_path / "watch-phone.png"
            phone_page.screenshot(path=str(phone), full_page=True)
            phone_page.close()
            loser = match.view()["hand"]["turn"]
            match.act(loser, "resign")
            page.locator("#banner h2").wait_for()
            assert page.locator("#banner h2").inner_text() == f"{['Ann', 'Bob'][1 - loser]} wins the match"
            assert page.locator("#status").inner_text() == "match over"
            violations = page.evaluate("window.__cspViolations")
            print(f"\nscreenshots of /watch: {desktop} {phone}; each discard shown after "
                  f"{', '.join(f'{d * 1000:.0f}' for d in delays)} ms")
        finally:
            browser.close()
    assert violations == []
    assert console_errors == []
    assert requests_seen and all(url.startswith(service.url + "/") for url in requests_seen), requests_seen
    assert max(delays) < SHOWN_WITHIN_SECONDS
