"""/docs as a person uses it, in headless Chromium: create a match against the standard bot
with Try it out, Authorize with the token it returns, read the view, and make the first move
with the form as Swagger UI fills it (plus the body typed in) -> 200, then open the rules the
description links to. No request leaves the service, the console shows no error and no
Content-Security-Policy violation. A screenshot of the page is kept under the test's temporary
folder (its path is printed).

The browser is Debian's ``chromium`` package (the machine cannot download Playwright's own
builds); .ci/run installs it, and under CI=true a missing browser fails the test.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.client.served import Served, in_ci, running

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]
NEW_MATCH = {"variant": "classic", "players": [{"name": "Ann"}, {"name": "Robo", "bot": True}]}
TIMEOUT_MS = 20000
# Reports every CSP violation into the page, where the test reads it.
CSP_LISTENER = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI);
});
"""


@pytest.fixture(scope="module")
def chromium() -> str:
    if shutil.which(CHROMIUM) is None:
        message = f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with running(tmp_path_factory.mktemp("serve")) as served:
        yield served


class Docs:
    """The Swagger UI page, driven by its own controls."""

    def __init__(self, page, url: str):
        self.page = page
        self.url = url

    def operation(self, tag: str, operation_id: str):
        block = self.page.locator(f"#operations-{tag}-{operation_id}")
        block.locator(".opblock-summary").first.click()
        block.locator("button.try-out__btn").click()
        return block

    def execute(self, block, method: str, path_end: str) -> dict:
        """Press Execute; returns what the browser received."""
        with self.page.expect_response(lambda r: r.request.method == method and r.url.endswith(path_end)) as caught:
            block.locator("button.execute").click()
        response = caught.value
        status = block.locator(".live-responses-table .response .response-col_status").first
        status.wait_for()
        assert status.inner_text().strip() == str(response.status)
        return {"status": response.status, "body": response.json(), "request": response.request.all_headers()}

    def authorize(self, token: str) -> None:
        self.page.locator(".auth-wrapper button.authorize").click()
        modal = self.page.locator(".modal-ux")
        scheme = modal.locator(".auth-container").filter(has_text="playerToken")
        scheme.locator("input").fill(token)
        scheme.locator("button.authorize").click()
        modal.locator("button.close-modal").click()


def test_a_first_move_from_the_docs(chromium, service: Served, tmp_path):
    from playwright.sync_api import sync_playwright

    requests_seen: list[str] = []
    console_errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 2000})
            page.set_default_timeout(TIMEOUT_MS)
            page.add_init_script(CSP_LISTENER)
            page.on("request", lambda request: requests_seen.append(request.url))
            page.on("console", lambda message: console_errors.append(message.text)
                    if message.type == "error" else None)
            page.on("pageerror", lambda error: console_errors.append(str(error)))
            page.goto(f"{service.url}/docs")
            page.locator(".opblock").first.wait_for()
            docs = Docs(page, service.url)
            # The view's model reads as a schema, not as Swagger UI's internal maps.
            model = page.locator("#model-GameView")
            model.locator(".model-box-control").first.click()
            model.locator(".property-row").first.wait_for()
            assert "OrderedMap" not in model.inner_text() and "hand" in model.inner_text()

            create = docs.operation("games", "createGame")
            create.locator("textarea.body-param__text").fill(json.dumps(NEW_MATCH))
            created = docs.execute(create, "POST", "/v1/games")
            assert created["status"] == 201, created
            game_id = created["body"]["game"]["id"]
            token = created["body"]["players"][0]["token"]
            assert "authorization" not in created["request"]

            docs.authorize(token)
            read = docs.operation("games", "getGame")
            read.locator('tr[data-param-name="game_id"] input').fill(game_id)
            view = docs.execute(read, "GET", f"/v1/games/{game_id}")
            assert view["status"] == 200, view
            assert view["request"]["authorization"] == f"Bearer {token}"
            assert "if-none-match" not in view["request"]
            you = view["body"]["you"]
            assert you["seat"] == 0 and "draw" in you["legal_actions"], you

            draw = docs.operation("games", "draw")
            draw.locator('tr[data-param-name="game_id"] input').fill(game_id)
            draw.locator("textarea.body-param__text").fill(json.dumps({"source": you["draw_sources"][0]}))
            moved = docs.execute(draw, "POST", f"/v1/games/{game_id}/draw")
            assert moved["status"] == 200, moved
            assert moved["body"]["version"] > view["body"]["version"]
            # Swagger UI's own defaults send no version and no idempotency key.
            assert {"if-match", "idempotency-key"}.isdisjoint(moved["request"])

            # The rules, linked from the description, open as text from the service itself.
            with page.context.expect_page() as opened:
                page.locator(".info a", has_text="/docs/rules.md").click()
            rules = opened.value
            rules.wait_for_load_state()
            assert rules.url == f"{service.url}/docs/rules.md"
            assert rules.locator("body").inner_text().startswith("# Gin Rummy: the rules this service enforces")
            rules.close()

            violations = page.evaluate("window.__cspViolations")
            screenshot = tmp_path / "docs.png"
            page.screenshot(path=str(screenshot), full_page=False)
            print(f"screenshot of /docs: {screenshot}")
        finally:
            browser.close()
    assert violations == []
    assert console_errors == []
    assert requests_seen and all(url.startswith(service.url + "/") for url in requests_seen), requests_seen
    assert Path(screenshot).stat().st_size > 0
