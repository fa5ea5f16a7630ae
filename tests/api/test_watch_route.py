"""GET /watch/{id} as served: an HTML page of the service's own, with its stylesheet and script
from the service, under the pages' Content-Security-Policy (this origin only, never framed);
the stream it reads stays a data answer. (tests/browser drives it in Chromium.)"""
from __future__ import annotations

import re

from service.middleware.security_headers import DATA_POLICY, DOCS_POLICY
from tests.api.support import Table
from tests.api.test_errors import assert_problem


def test_the_page_and_its_files_come_from_the_service(any_app):
    client = any_app.test_client()
    table = Table.open(any_app, client, "classic", seed=3)
    page = client.get(f"/watch/{table.game_id}")
    assert page.status_code == 200 and page.mimetype == "text/html"
    assert page.headers["Content-Security-Policy"] == DOCS_POLICY
    assert "no-cache" in page.headers["Cache-Control"]
    html = page.get_data(as_text=True)
    assert f'data-game="{table.game_id}"' in html and f'data-api="/v1/games/{table.game_id}"' in html
    # Nothing from elsewhere, and no inline script or style (the policy forbids them).
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(s.startswith("/watch/assets/") or s == "data:," for s in sources), sources
    assert "<script>" not in html and "<style" not in html and " style=" not in html
    for name, kind in (("watch.css", "text/css"), ("watch.js", "text/javascript")):
        asset = client.get(f"/watch/assets/{name}")
        assert asset.status_code == 200 and asset.mimetype == kind
        assert asset.headers["Content-Security-Policy"] == DOCS_POLICY
    assert client.get("/watch/assets/watch.html").status_code == 404
    assert client.get("/watch/assets/../routes.py").status_code == 404
    stream = client.get(f"/v1/games/{table.game_id}/stream?after=0", buffered=False)
    assert stream.headers["Content-Security-Policy"] == DATA_POLICY
    stream.close()


def test_the_page_is_also_at_its_address_with_a_slash(any_app):
    client = any_app.test_client()
    table = Table.open(any_app, client, "classic", seed=3)
    slashed = client.get(f"/watch/{table.game_id}/")
    assert slashed.status_code == 200 and slashed.headers["Content-Security-Policy"] == DOCS_POLICY
    assert slashed.get_data() == client.get(f"/watch/{table.game_id}").get_data()


def test_a_malformed_id_is_not_found(any_app):
    assert_problem(any_app.test_client().get("/watch/not-a-game"), 404, "game_not_found")
