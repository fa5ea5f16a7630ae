"""Abuse, tried against real gunicorn and real Redis: each flood is bounded, with its figure printed.

- the advice flood: a box sitter advising without end is refused at ADVICE_PER_HAND, and the
  game's bytes in Redis stay under GAME_BYTES_BOUND, with or without a fresh Idempotency-Key;
- creation floods: without a key nothing is stored; with a key, the quota is the number of
  games made; a game nobody moved in expires after UNSTARTED_GAME_TTL_SECONDS;
- bogus credentials: made-up tokens and keys from one address are limited as that address and
  add no Redis key, however many are sent;
- a Redis with a tiny maxmemory: creations and moves refused with 503 store_full, nothing
  half-written, existing games readable, used_memory past maxmemory by less than one game;
- the seed brute force: a seed from a known range is not found from what a player sees, yet
  the server's secret reproduces the deal.
"""
from __future__ import annotations

import random
import secrets
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import redis

from service import rules
from service.games.seeds import new_server_seed
from service.rules.match import ADVICE_PER_HAND
from service.store import RedisStore
from service.tokens import ServerSecret
from tests.e2e.players import ApiClient, Game, Move, legal_move
from tests.e2e.stored_games import invariant_violations, load_game
from tests.gunicorn_server import TEST_API_KEY
from tests.redis_servers import RedisServer

pytestmark = pytest.mark.slow

KEY = {"X-API-Key": TEST_API_KEY}
CLASSIC = {"variant": "classic", "players": [{"name": "Ann"}, {"name": "Bob"}]}
# A box match with three people; which seat sits out is decided by the cut.
BOX_NAMES = ["Ann", "Bob", "Cy"]
# What one box match may take in Redis after its sitter advised as much as allowed: a fresh
# match (~2 KB) plus ADVICE_PER_HAND longest messages in the state and in the event log
# (~23 KB measured), plus one small idempotent reply per accepted post (~32 KB measured).
GAME_BYTES_BOUND = 48_000
LONGEST_ADVICE = "x" * 280


def game_bytes(client: redis.Redis, prefix: str, game_id: str) -> tuple[int, int]:
    """(MEMORY USAGE summed over every key of ``game_id``, how many keys)."""
    keys = list(client.scan_iter(match=f"{prefix}{{{game_id}}}*", count=1000))
    return sum(client.memory_usage(key, samples=0) or 0 for key in keys), len(keys)


def keys_under(client: redis.Redis, pattern: str) -> list[bytes]:
    return list(client.scan_iter(match=pattern, count=1000))


def steady_minute(seconds_needed: float = 20.0) -> None:
    """Wait, if needed, until ``seconds_needed`` remain in the clock minute: per-minute counts
    (rate limit, creation quota) must not straddle two windows in one test."""
    remaining = 60 - time.time() % 60
    if remaining < seconds_needed:
        time.sleep(remaining + 0.05)


@pytest.fixture
def shared_redis(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


# --- (a) the advice flood ---------------------------------------------------------------------

@pytest.mark.parametrize("fresh_key", [False, True], ids=["same-request", "fresh-idempotency-key"])
@pytest.mark.timeout(120)
def test_the_advice_flood_is_bounded(fresh_key, start_gunicorn, redis_url, test_prefix, shared_redis):
    server = start_gunicorn({"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix}, workers=2)
    client = ApiClient(server.url)
    created = client.create_response("box", BOX_NAMES)
    assert created.status_code == 201
    body = created.json()
    game = Game(body["game"]["id"], tuple(player["token"] for player in body["players"]))
    [sitter] = [player["seat"] for player in body["game"]["players"] if player["role"] == "sitter"]
    fresh_bytes, _ = game_bytes(shared_redis, test_prefix, game.game_id)

    answers: Counter = Counter()
    sizes = []
    posts = ADVICE_PER_HAND * 4
    for n in range(posts):
        headers = {"Idempotency-Key": f"flood-{n}-{secrets.token_hex(8)}"} if fresh_key else {}
        response = client.act(game.game_id, game.tokens[sitter], Move("advice", {"message": LONGEST_ADVICE}), headers)
        code = response.json().get("code") if response.status_code != 200 else None
        answers[response.status_code, code] += 1
        if n + 1 in (ADVICE_PER_HAND, posts):
            sizes.append(game_bytes(shared_redis, test_prefix, game.game_id))
    client.close()

    (at_cap, keys_at_cap), (at_end, keys_at_end) = sizes
    print(f"\nadvice flood ({'fresh Idempotency-Key each' if fresh_key else 'no key'}): {posts} posts -> "
          f"{dict(answers)}; game bytes fresh {fresh_bytes}, at the cap {at_cap} ({keys_at_cap} keys), "
          f"after the flood {at_end} ({keys_at_end} keys); bound {GAME_BYTES_BOUND}")
    assert answers == {(200, None): ADVICE_PER_HAND, (409, "advice_limit_reached"): posts - ADVICE_PER_HAND}
    assert at_end < GAME_BYTES_BOUND
    # Refused posts store nothing, under whatever key they come.
    assert (at_end, keys_at_end) == (at_cap, keys_at_cap)


# --- (b) creation floods ------------------------------------------------------------------------

QUOTA = 20
UNSTARTED_TTL = 3


@pytest.mark.timeout(120)
def test_creation_floods_are_bounded_and_unstarted_games_expire(start_gunicorn, redis_url, test_prefix,
                                                                shared_redis):
    server = start_gunicorn({"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix,
                             "CREATE_QUOTA_PER_MINUTE": str(QUOTA),
                             "UNSTARTED_GAME_TTL_SECONDS": str(UNSTARTED_TTL)}, workers=2)
    client = ApiClient(server.url)

    # Without a key (a Redis deployment does not allow anonymous creation by default).
    anonymous = Counter(
        (r.status_code, r.json()["code"]) for r in (client.request("POST", "/v1/games", json=CLASSIC)
                                                    for _ in range(200)))
    stored_after_anonymous = keys_under(shared_redis, f"{test_prefix}*")
    print(f"\nanonymous creation flood: 200 posts -> {dict(anonymous)}; keys stored: {len(stored_after_anonymous)}")
    assert anonymous == {(401, "unauthorized"): 200}
    assert stored_after_anonymous == []

    # With a key, beyond the per-key quota; refused creations do not use it up.
    steady_minute()
    invalid = [client.request("POST", "/v1/games", json={**CLASSIC, "variant": "box"}, headers=KEY) for _ in range(5)]
    assert {(r.status_code, r.json()["code"]) for r in invalid} == {(422, "invalid_request")}
    answers = [client.request("POST", "/v1/games", json=CLASSIC, headers=KEY) for _ in range(5 * QUOTA)]
    made = [r.json()["game"]["id"] for r in answers if r.status_code == 201]
    refused = [r for r in answers if r.status_code != 201]
    games_stored = keys_under(shared_redis, f"{test_prefix}{{g_*}}:s")
    print(f"keyed creation flood: {len(answers)} posts -> {len(made)} created, {len(refused)} refused; "
          f"games stored {len(games_stored)} (quota {QUOTA}/min)")
    assert len(made) == QUOTA == len(games_stored)
    assert {(r.status_code, r.json()["code"]) for r in refused} == {(429, "creation_quota_exceeded")}
    assert all(1 <= int(r.headers["Retry-After"]) <= 60 for r in refused)

    # Nobody moves: every game expires after the short TTL (410 while its tombstone lives).
    started = time.monotonic()
    while client.view(made[-1]).status_code != 410:
        assert time.monotonic() - started < UNSTARTED_TTL + 10, "the unstarted game did not expire"
        time.sleep(0.1)
    expired_after = time.monotonic() - started
    codes = {client.view(game_id).json().get("code") for game_id in made}
    left = keys_under(shared_redis, f"{test_prefix}{{g_*}}:s")
    print(f"unstarted games expired {expired_after:.1f} s after the flood (TTL {UNSTARTED_TTL} s); "
          f"views {codes}; game states left {len(left)}")
    assert codes == {"game_expired"} and left == []
    client.close()


# --- (c) bogus-credential rate-limit evasion ----------------------------------------------------

PER_MINUTE = 40


@pytest.mark.timeout(120)
def test_bogus_credentials_do_not_evade_the_rate_limit(start_gunicorn, redis_url, test_prefix, shared_redis):
    server = start_gunicorn({"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix,
                             "RATE_LIMIT_PER_MINUTE": str(PER_MINUTE)}, workers=2)
    client = ApiClient(server.url)
    steady_minute(30)
    game, other = client.create(), client.create()  # counted against the API key
    path = f"/v1/games/{game.game_id}"
    bogus = [
        lambda: {"Authorization": f"Bearer {secrets.token_urlsafe(32)}"},  # a made-up token, well formed
        lambda: {"X-API-Key": secrets.token_urlsafe(24)},  # a made-up key
        lambda: {"Authorization": f"Bearer {other.tokens[0]}"},  # a real token, of another game
    ]

    statuses: Counter = Counter()
    key_counts = {}
    sent = 0
    for target in (100, 300):
        while sent < target:
            response = client.request("GET", path, headers=bogus[sent % len(bogus)]())
            statuses[response.status_code] += 1
            sent += 1
        key_counts[target] = len(keys_under(shared_redis, f"{test_prefix}*"))
    limiter_keys = sorted(key.decode().removeprefix(test_prefix).rsplit(":", 1)[0]
                          for key in keys_under(shared_redis, f"{test_prefix}rl:*"))
    # The real player still has an allowance of their own.
    own = client.view(game.game_id, game.tokens[0])
    print(f"\nbogus credentials: {sent} requests from one address -> {dict(statuses)} "
          f"(limit {PER_MINUTE}/min); Redis keys after 100: {key_counts[100]}, after 300: {key_counts[300]}; "
          f"limiter buckets {limiter_keys}; the real token then: {own.status_code}")
    # The address's allowance, once: made-up keys and made-up or foreign tokens refused (401),
    # and then everything is 429.
    assert sent - statuses[429] == PER_MINUTE
    assert set(statuses) == {401, 429}
    assert key_counts[100] == key_counts[300]
    assert len(limiter_keys) == 2 and limiter_keys[0].startswith("rl:a:") and limiter_keys[1].startswith("rl:k:")
    assert own.status_code == 200 and int(own.headers["RateLimit-Remaining"]) == PER_MINUTE - 1
    client.close()


# --- (d) a Redis with a tiny maxmemory ------------------------------------------------------

MAXMEMORY = 2 * 1024 * 1024
MAX_CREATIONS = 3000
MAX_MOVES = 3000
REFUSED_TRIES = 50
# Redis' keyspace and expiry tables are arrays of 8-byte pointers, doubled when the key count
# passes a power of two; the write that passes it allocates the doubled tables (both are kept
# while Redis rehashes incrementally). So one write may take one game's keys plus this much.
POINTER_BYTES = 8
TABLES = 2  # the keyspace and the expiry table


def table_growth(key_count: int) -> int:
    """Bytes Redis may allocate for its tables in the write that brings it to ``key_count`` keys."""
    return TABLES * POINTER_BYTES * 2 ** max(key_count - 1, 1).bit_length()


@pytest.fixture
def tiny_redis(tmp_path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "tiny-redis",
                         extra_args=("--maxmemory", str(MAXMEMORY), "--maxmemory-policy", "noeviction")).start()
    yield server
    server.stop()


@pytest.mark.timeout(300)
def test_a_full_redis_refuses_writes_cleanly(tiny_redis, start_gunicorn, test_prefix):
    server = start_gunicorn({"REDIS_URL": tiny_redis.url, "KEY_PREFIX": test_prefix,
                             "CREATE_QUOTA_PER_MINUTE": "0"}, workers=2)
    client = ApiClient(server.url)
    inspect = tiny_redis.client()
    baseline = inspect.info("memory")["used_memory"]
    # used_memory right after each write that Redis accepted: what the writes themselves took.
    after_writes: list[int] = []

    def create() -> tuple[int, str | None, Game | None]:
        response = client.create_response("classic", ["Ann", "Bob"])
        if response.status_code == 201:
            after_writes.append(inspect.info("memory")["used_memory"])
            body = response.json()
            return 201, None, Game(body["game"]["id"], tuple(player["token"] for player in body["players"]))
        assert response.headers.get("Retry-After", "").isdigit()
        return response.status_code, response.json()["code"], None

    rng = random.Random(3)

    def move(game: Game) -> tuple[int, str | None]:
        view = client.mover_view(game)
        response = client.act(game.game_id, game.tokens[view["you"]["seat"]], legal_move(view, rng))
        if response.status_code == 200:
            after_writes.append(inspect.info("memory")["used_memory"])
            return 200, None
        return response.status_code, response.json()["code"]

    made: list[Game] = []
    for _ in range(MAX_CREATIONS):
        status, code, game = create()
        if game is None:
            break
        made.append(game)
    assert (status, code) == (503, "store_full"), f"{len(made)} creations, then {status} {code}"
    keys_when_full = inspect.dbsize()
    one_game = max(sum(inspect.memory_usage(key, samples=0) or 0
                       for key in inspect.scan_iter(match=f"{test_prefix}{{{game.game_id}}}*"))
                   for game in made[:20])

    # Moves, round robin, until one is refused (memory use moves a little as connections come
    # and go, so a few may still fit).
    moves = 0
    for moves in range(MAX_MOVES):
        status, code = move(made[moves % len(made)])
        if status != 200:
            break
    assert (status, code) == (503, "store_full"), f"{moves} moves, then {status} {code}"

    # Full stays full: more tries of both are refused and change nothing.
    before = {game.game_id: client.view(game.game_id).json()["version"] for game in made}
    refused = Counter(create()[:2] for _ in range(REFUSED_TRIES))
    refused.update(move(made[n % len(made)]) for n in range(REFUSED_TRIES))
    after = {game.game_id: client.view(game.game_id).json()["version"] for game in made}
    # Event reads too: their script declares no writes, so a full Redis still runs it.
    assert {client.events(game.game_id).status_code for game in made} == {200}

    # Every game is still readable, and what is stored is whole.
    truth = RedisStore(tiny_redis.url, test_prefix)
    try:
        stored_ids = {key.removeprefix(test_prefix)[1:].split("}")[0]
                      for key in inspect.scan_iter(match=f"{test_prefix}{{g_*}}:s", count=1000)}
        broken = {game.game_id: invariant_violations(load_game(truth, game.game_id)) for game in made}
    finally:
        truth.close()
    peak = max(after_writes)
    allowance = one_game + table_growth(inspect.dbsize())
    print(f"\ntiny maxmemory {MAXMEMORY} (empty: {baseline}): {len(made)} games created, then 503 store_full; "
          f"{moves} moves, then 503 store_full; {2 * REFUSED_TRIES} more tries -> {dict(refused)}; "
          f"peak used_memory after a write {peak}, over maxmemory by {peak - MAXMEMORY} "
          f"(allowed: one game {one_game} + table growth {allowance - one_game} = {allowance})")
    assert refused == {(503, "store_full"): 2 * REFUSED_TRIES}
    assert after == before and inspect.dbsize() == keys_when_full
    assert stored_ids == {game.game_id for game in made}
    assert {game_id: problems for game_id, problems in broken.items() if problems} == {}
    assert peak - MAXMEMORY <= allowance
    client.close()
    inspect.close()


# --- (e) the seed brute force -------------------------------------------------------------------

SEED_RANGE = range(0, 20001)
SEED = 13_337
SERVER_SECRET = "abuse-test-server-secret-" + "s" * 24


def observed(cut: list[str], upcard: str, hand: list[str]) -> tuple:
    """What a player can see of a fresh classic deal, as a comparable value."""
    return tuple(cut), upcard, tuple(sorted(hand))


def seen_locally(seed: str | int, seat: int) -> tuple:
    """What ``seat`` would see of a match dealt from ``seed`` as the service would deal it
    without its secret (the server seed derived from the seed itself, docs/fairness.md)."""
    match, events = rules.new_match("classic", ["Ann", "Bob"], rules.rules_for("classic", None), seed,
                                    server_seed=new_server_seed(str(seed)))
    [dealt] = [event for event in events if event.type == "dealt" and event.seat == seat]
    return observed(events[0].public["cards"], str(match.hand.pile[-1]), dealt.secret["cards"])


@pytest.mark.timeout(180)
def test_a_seed_from_a_known_range_cannot_be_brute_forced(start_gunicorn, redis_url, test_prefix):
    server = start_gunicorn({"REDIS_URL": redis_url, "KEY_PREFIX": test_prefix, "SERVER_SECRET": SERVER_SECRET,
                             "ALLOW_ANONYMOUS_CREATE": "true"}, workers=2)
    client = ApiClient(server.url)
    response = client.request("POST", "/v1/games", json={**CLASSIC, "seed": SEED}, headers=KEY)
    assert response.status_code == 201
    body = response.json()
    assert body["game"]["seeded"] is True
    game = Game(body["game"]["id"], tuple(player["token"] for player in body["players"]))
    seat = 0
    events = client.events(game.game_id, game.tokens[seat]).json()["events"]
    view = client.view(game.game_id, game.tokens[seat]).json()
    cut = next(event["cards"] for event in events if event["type"] == "cut")
    attacker_sees = observed(cut, view["hand"]["discard_top"], view["you"]["hand"])

    # The attacker's search, and the same search against a deal made from the raw seed (what
    # the service did before seeds were mixed): the search works, it just finds nothing now.
    raw_deal = seen_locally(SEED, seat)
    started = time.perf_counter()
    matches, raw_matches = [], []
    for seed in SEED_RANGE:
        local = seen_locally(seed, seat)
        if local == attacker_sees:
            matches.append(seed)
        if local == raw_deal:
            raw_matches.append(seed)
    searched = time.perf_counter() - started

    # With the server's secret, the seed gives the stored deal again, card for card.
    mixed = ServerSecret(SERVER_SECRET).mixed_seed(SEED)
    _, replayed = rules.new_match("classic", ["Ann", "Bob"], rules.rules_for("classic", None), mixed,
                                  server_seed=new_server_seed(mixed))
    truth = RedisStore(redis_url, test_prefix)
    try:
        stored = [rules.decode_event(text) for text in truth.events(game.game_id, 0)]
    finally:
        truth.close()
    as_dealt = [(e.type, e.seat, e.public, e.secret) for e in stored[:len(replayed)]]
    again = client.request("POST", "/v1/games", json={**CLASSIC, "seed": SEED}, headers=KEY).json()
    again_view = client.view(again["game"]["id"], again["players"][seat]["token"]).json()

    anonymous_seeded = client.request("POST", "/v1/games", json={**CLASSIC, "seed": SEED})
    anonymous = client.request("POST", "/v1/games", json=CLASSIC)
    print(f"\nseed brute force over {len(SEED_RANGE)} seeds ({searched:.1f} s): {len(matches)} matches for the "
          f"served game, {raw_matches} for the raw seed; the secret replays the deal: "
          f"{as_dealt == [(e.type, e.seat, e.public, e.secret) for e in replayed]}; "
          f"anonymous seeded creation: {anonymous_seeded.status_code} {anonymous_seeded.json().get('code')}")
    assert matches == []
    assert raw_matches == [SEED]
    assert as_dealt == [(e.type, e.seat, e.public, e.secret) for e in replayed]
    assert again_view["you"]["hand"] == view["you"]["hand"]  # the same seed, the same deal
    assert (anonymous_seeded.status_code, anonymous_seeded.json()["code"]) == (403, "seed_not_allowed")
    assert anonymous.status_code == 201 and anonymous.json()["game"]["seeded"] is False
    client.close()
