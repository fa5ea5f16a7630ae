"""The feed entries of a change's notices (service/games/notices.py): for an API key's players,
a webhook, or both; for nobody, none, and the notices are not even made."""
from __future__ import annotations

from service.games.notices import Notified, feed
from service.store.feed import NO_OWNER

NOTICE = Notified("wh_g_1_turn", "g", "turn", '{"type":"turn"}')


def made(log: list[str]):
    def announced() -> list[Notified]:
        log.append("made")
        return [NOTICE]
    return announced


def test_notices_nobody_reads_are_not_made():
    log: list[str] = []
    assert feed(None, None, made(log)) == ()
    assert log == []


def test_notices_go_to_the_keys_players_to_the_webhook_or_to_both():
    log: list[str] = []
    [keyed] = feed("key1", None, made(log))
    [hooked] = feed(None, "https://example.com/hook", made(log))
    [both] = feed("key1", "https://example.com/hook", made(log))
    assert log == ["made"] * 3
    assert (keyed.owner, keyed.url) == ("key1", "")
    assert (hooked.owner, hooked.url) == (NO_OWNER, "https://example.com/hook")
    assert (both.owner, both.url) == ("key1", "https://example.com/hook")
    assert {entry.body for entry in (keyed, hooked, both)} == {NOTICE.body}
    assert {entry.id for entry in (keyed, hooked, both)} == {NOTICE.id}
