"""Quick play under load: tickets arriving at a steady rate, paired by the service, and every
pairing checked afterwards.

    python bench/tickets.py [--tickets 10000] [--rate 500] [--clients 200] [--workers 2]
                            [--variant classic] [--rated] [--bot-share 0.1] [--bot-after 1]
                            [--redis-url URL]

Starts a private redis-server (unless --redis-url; either way under a key prefix of its own,
deleted at the end), the service under its shipped gunicorn settings and one ``ginrummy
worker`` (bot fallbacks and expiries are its timers). ``--clients`` threads, each on its own
keep-alive connection, queue ``--tickets`` tickets of one API key at ``--rate`` per second
(ticket i is sent at start + i / rate by whichever client is free), each for a new player, with
an Idempotency-Key; a ticket answered ``waiting`` is long-polled (``wait=30``) by its client
until it changes. A ``--bot-share`` of the tickets ask for ``--bot-after`` seconds of bot
fallback, each in a queue of its own (a ``target_score`` nobody else asks for), so that
nobody comes and the fallback is what matches it; the others share one queue and pair
with each other.

Then, from Redis and the API, it checks and prints:

- pairs (groups of 3 in box): from the arrival of a group's last ticket (the ticket's
  ``created_at``) to its match (the match's ``created_at``, both the service's clock), and
  from the client sending that ticket to the moment every client of the group knew
  (its POST's or its long-poll's answer), p50 / p99 / max;
- bot fallbacks: the match's creation after the ticket's due time, and the client's learning
  after it, p50 / p99 / max; the bots' levels;
- tickets lost (not matched, beyond the ones left over when the count does not divide into
  groups), tickets in two matches, matches whose seats are not exactly the tickets that name
  them, matches nobody's ticket names, and whether every ticket's token opens its seat;
- per ticket, over the run (first arrival to last match): CPU of gunicorn (workers and
  master), of the worker, of redis-server (a private one only) and of this load generator;
  Redis round trips of gunicorn and of the worker, counted on their wire
  (bench/round_trips.py), and Redis commands (INFO commandstats: those scripts run included).

The clients share the machine's CPUs with the service: run it on a quiet machine.
"""
from __future__ import annotations

import argparse
import datetime
import http.client
import os
import platform
import re
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

import redis  # noqa: E402

from bench.bench_redis import bench_redis  # noqa: E402

from bench import callbacks, round_trips  # noqa: E402
from bench.load import HttpTransport, cpu_seconds  # noqa: E402
from service.games.record import Record  # noqa: E402
from service.store.keys import game_keys, ticket_keys  # noqa: E402
from service.store.matchmaking import Ticket  # noqa: E402
from tests.e2e.waiters import changed, command_calls, percentile  # noqa: E402
from tests.e2e.webhook_stack import WorkerProcess  # noqa: E402
from tests.gunicorn_server import TEST_API_KEY, TEST_SERVER_SECRET, GunicornServer  # noqa: E402
from tests.webhooks.support import new_secret  # noqa: E402

SEATS = {"classic": 2, "box": 3}
PLAYER_PREFIX = "player-"
WAIT_SECONDS = 30
# A client stops waiting for a ticket this long after sending it (and its bot time).
GIVE_UP_SECONDS = 60.0
# Longer than a long-poll's wait, with room for a slow answer.
REQUEST_TIMEOUT_SECONDS = WAIT_SECONDS + 30
# Times a client asks again after a 503 or a closed connection.
RETRIES = 10
# Clients that check the tokens after the run.
TOKEN_READERS = 16
# Each bot-fallback ticket is alone in its queue: rules nobody else asks for.
LONE_TARGET_FROM = 101
LONE_TARGET_TO = 10000
# Targets (issue 30): a pair's match p99 within 1 s of its second ticket's arrival, a bot
# fallback at most 1 s after its time. Arrivals later than this behind schedule mean the
# service (or the machine) did not keep up with the rate.
TARGETS = {"pair_p99": 1.0, "bot_max": 1.0, "lag_p99": 1.0}


@dataclass
class Sent:
    """What one ticket's client saw (times are time.time())."""

    index: int
    bot: bool
    measured: bool  # sent after the warm-up
    due_at: float = 0.0  # when it was to be sent
    sent_at: float = 0.0
    answered_at: float = 0.0  # the POST's answer
    learned_at: float | None = None  # when the client first saw it matched
    retries: int = 0  # requests asked again (503, or the connection closed)
    ticket: dict | None = None  # the last answer's ticket
    failure: str | None = None


@dataclass
class Run:
    options: argparse.Namespace
    port: int
    sent: list[Sent]
    start: float = 0.0
    next_index: int = 0
    resolved: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    changed: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)

    def take(self) -> Sent | None:
        with self.lock:
            if self.next_index >= len(self.sent):
                return None
            self.next_index += 1
            return self.sent[self.next_index - 1]

    def done(self) -> None:
        with self.changed:
            self.resolved += 1
            self.changed.notify_all()


def is_bot_ticket(index: int, share: float) -> bool:
    """Spreads ``share`` of the tickets evenly over the run."""
    return int((index + 1) * share) > int(index * share)


def ticket_body(options, sent: Sent, lone: int) -> dict:
    body = {"player": {"external_id": f"{PLAYER_PREFIX}{sent.index}", "name": f"P{sent.index}"},
            "variant": options.variant, "rated": options.rated}
    if sent.bot:
        body["bot_after_seconds"] = options.bot_after
        body["rules"] = {"target_score": LONE_TARGET_FROM + lone}
    return body


class Transport(HttpTransport):
    """A keep-alive connection whose long-polls may take their whole wait on a busy server; a
    request that times out is answered 0 (nothing known), as a closed connection is."""

    def __init__(self, port: int) -> None:
        super().__init__(port)
        self.connection.timeout = REQUEST_TIMEOUT_SECONDS

    def __call__(self, method: str, path: str, body: object = None, headers: dict | None = None):
        try:
            return super().__call__(method, path, body, headers)
        except TimeoutError:
            self.connection.close()
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_SECONDS)
            return 0, None


def ask(send: Transport, method: str, path: str, body: dict | None, headers: dict) -> tuple[int, dict | None, int]:
    """The answer and how many times it was asked again, as a client should (the same
    Idempotency-Key): when the connection closed (a recycled worker's) or timed out, or the
    service answered 503 (after its Retry-After)."""
    for retries in range(RETRIES):
        status, answer = send(method, path, body, headers)
        if status not in (0, 503):
            break
        if status == 503:
            time.sleep(answer["params"].get("retry_after", 1))
    return status, answer, retries


def ticket_client(run: Run, lone_of: dict[int, int]) -> None:
    """Sends the next ticket at its time, long-polls it until it is no longer waiting, repeats."""
    send = Transport(run.port)
    key = {"X-API-Key": TEST_API_KEY}

    try:
        while (sent := run.take()) is not None:
            sent.due_at = run.start + sent.index / run.options.rate
            pause = sent.due_at - time.time()
            if pause > 0:
                time.sleep(pause)
            body = ticket_body(run.options, sent, lone_of.get(sent.index, 0))
            sent.sent_at = time.time()
            status, answer, retries = ask(send, "POST", "/v1/matchmaking/tickets", body,
                                          {**key, "Idempotency-Key": f"bench-ticket-{sent.index}"})
            sent.retries += retries
            sent.answered_at = time.time()
            if status != 201:
                sent.failure = f"POST answered {status}: {answer}"
                run.done()
                continue
            sent.ticket = answer["ticket"]
            if sent.ticket["status"] == "matched":
                sent.learned_at = sent.answered_at
            give_up_at = sent.sent_at + (run.options.bot_after if sent.bot else 0) + GIVE_UP_SECONDS
            while sent.ticket["status"] == "waiting" and time.time() < give_up_at:
                wait = max(1, min(WAIT_SECONDS, int(give_up_at - time.time())))
                status, answer, retries = ask(send, "GET", f"/v1/matchmaking/tickets/{sent.ticket['id']}?wait={wait}",
                                              None, key)
                sent.retries += retries
                if status != 200:
                    sent.failure = f"GET answered {status}: {answer}"
                    break
                sent.ticket = answer["ticket"]
            if sent.ticket["status"] == "matched" and sent.learned_at is None:
                sent.learned_at = time.time()
            run.done()
    finally:
        send.close()


@dataclass
class Usage:
    """CPU seconds and Redis counts at one moment."""

    cpu: dict[str, float]
    trips: dict[str, int]
    commands: dict[str, int]


def usage(server: GunicornServer, worker: WorkerProcess, client: redis.Redis, own_redis: bool,
          counted: Path) -> Usage:
    cpu = {"gunicorn": cpu_seconds(server.process.pid, children=True)
           + sum(cpu_seconds(pid) for pid in server.worker_pids()),
           "worker": cpu_seconds(worker.process.pid), "load generator": cpu_seconds(os.getpid())}
    if own_redis:
        cpu["redis-server"] = callbacks.redis_cpu_seconds(client)
    worker_pids = {worker.process.pid}
    trips = Counter()
    for pid, count in round_trips.totals(counted).items():
        trips["worker" if pid in worker_pids else "gunicorn"] += count
    return Usage(cpu, dict(trips), command_calls(client))


def run_tickets(options, port: int, server: GunicornServer, worker: WorkerProcess, client: redis.Redis,
                own_redis: bool, counted: Path) -> tuple[list[Sent], Usage, Usage, float]:
    warm = int(options.warmup_seconds * options.rate)
    sent = [Sent(index, is_bot_ticket(index, options.bot_share), index >= warm) for index in range(warm + options.tickets)]
    lone_of = {s.index: n for n, s in enumerate(s for s in sent if s.bot)}
    if len(lone_of) > LONE_TARGET_TO - LONE_TARGET_FROM + 1:
        raise SystemExit(f"at most {LONE_TARGET_TO - LONE_TARGET_FROM + 1} bot-fallback tickets")
    people = sum(not s.bot for s in sent)
    left_over = people % SEATS[options.variant]
    run = Run(options, port, sent)
    run.start = time.time() + 1.0
    threads = [threading.Thread(target=ticket_client, args=(run, lone_of), daemon=True) for _ in range(options.clients)]
    for thread in threads:
        thread.start()
    while sent[min(warm, len(sent) - 1)].sent_at == 0:  # the measured tickets start
        time.sleep(0.005)
    before = usage(server, worker, client, own_redis, counted)
    measured_from = time.time()
    with run.changed:
        # The window ends when every ticket that can be matched is, or when every client has given up.
        while run.resolved < len(sent) - left_over and any(thread.is_alive() for thread in threads):
            run.changed.wait(0.2)
    after = usage(server, worker, client, own_redis, counted)
    seconds = time.time() - measured_from
    for s in sent:  # the left-over tickets: cancelled, so their clients stop waiting
        if s.ticket is not None and s.ticket["status"] == "waiting":
            HttpTransport(port)("DELETE", f"/v1/matchmaking/tickets/{s.ticket['id']}", None,
                                {"X-API-Key": TEST_API_KEY})
    for thread in threads:
        thread.join(WAIT_SECONDS + 5)
    return sent, before, after, seconds


@dataclass
class Checked:
    """What Redis and the API say of the run."""

    tickets: dict[str, Ticket]  # by id, as stored
    games: dict[str, Record]  # every match under the prefix, by id
    named: dict[str, list[str]]  # game id -> the ids of the tickets that name it
    problems: list[str] = field(default_factory=list)
    tokens: Counter = field(default_factory=Counter)  # outcome -> tickets


def check(client: redis.Redis, prefix: str, port: int) -> Checked:
    """Every ticket and match under ``prefix`` (whatever the clients saw of them) against each other."""
    ids = [key.decode()[len(prefix) + 1:].split("}", 1)[0]
           for key in client.scan_iter(match=f"{prefix}{{t_*}}:t", count=1000)]
    pipe = client.pipeline(transaction=False)
    for ticket_id in ids:
        pipe.hmget(ticket_keys(prefix, ticket_id).hash, "s", "v", "d")
    tickets = {}
    for ticket_id, (status, version, data) in zip(ids, pipe.execute()):
        if data is not None:
            tickets[ticket_id] = replace(Ticket.parse(data), status=status.decode(), version=int(version))
    game_ids = [key.decode()[len(prefix) + 1:].split("}", 1)[0]
                for key in client.scan_iter(match=f"{prefix}{{g_*}}:s", count=1000)]
    pipe = client.pipeline(transaction=False)
    for game_id in game_ids:
        pipe.hget(game_keys(prefix, game_id).state, "s")
    games = {game_id: Record.parse(state.decode()) for game_id, state in zip(game_ids, pipe.execute())}
    named = defaultdict(list)
    for ticket in tickets.values():
        if ticket.game_id is not None:
            named[ticket.game_id].append(ticket.id)
    checked = Checked(tickets, games, dict(named))
    for game_id, record in games.items():
        people = sorted(seat.external_id for seat in record.seats if seat.external_id is not None)
        if game_id not in named:
            checked.problems.append(f"{game_id}: no ticket names this match")
        elif people != sorted(tickets[t].player.external_id for t in named[game_id]):
            checked.problems.append(f"{game_id}: seats {people} are not its tickets {named[game_id]}")
        for seat, ticket_id in ((tickets[t].seat, t) for t in named.get(game_id, [])):
            if record.seats[seat].external_id != tickets[ticket_id].player.external_id:
                checked.problems.append(f"{ticket_id}: seat {seat} of {game_id} is someone else's")
    seated = Counter(seat.external_id for record in games.values() for seat in record.seats if seat.external_id)
    checked.problems += [f"{player} sits in {count} matches" for player, count in seated.items() if count > 1]
    checked.problems += [f"{game_id}: named by tickets but missing" for game_id in named if game_id not in games]
    checked.tokens = tokens_that_work(list(tickets.values()), port)
    return checked


def tokens_that_work(tickets: list[Ticket], port: int) -> Counter:
    """For each matched ticket, the token its read hands out (as its API key) tried on the
    match: ``ok`` when it opens the ticket's own seat (``you.seat``), else the status seen."""
    matched = [ticket for ticket in tickets if ticket.status == "matched"]
    outcomes = Counter()

    def reader(share: list[Ticket]) -> None:
        send = Transport(port)
        for ticket in share:
            status, read, _ = ask(send, "GET", f"/v1/matchmaking/tickets/{ticket.id}", None, {"X-API-Key": TEST_API_KEY})
            if status != 200:
                outcomes[f"ticket read {status}"] += 1
                continue
            token = read["ticket"]["token"]
            status, view, _ = ask(send, "GET", f"/v1/games/{ticket.game_id}", None, {"Authorization": f"Bearer {token}"})
            seat = view.get("you", {}).get("seat") if status == 200 else None
            outcomes["ok" if seat == ticket.seat else f"match read {status}, seat {seat}"] += 1
        send.close()

    threads = [threading.Thread(target=reader, args=(matched[n::TOKEN_READERS],)) for n in range(TOKEN_READERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def ms(values: list[float]) -> str:
    if not values:
        return "none"
    return (f"p50 {percentile(values, 0.5) * 1000:.0f} ms, p99 {percentile(values, 0.99) * 1000:.0f} ms, "
            f"max {max(values) * 1000:.0f} ms ({len(values)})")


def report(options, sent: list[Sent], checked: Checked, before: Usage, after: Usage, seconds: float) -> None:
    def client_of(ticket: Ticket) -> Sent:
        return sent[int(ticket.player.external_id.removeprefix(PLAYER_PREFIX))]

    failures = [s.failure for s in sent if s.failure]
    lags = [s.sent_at - s.due_at for s in sent if s.measured and s.sent_at]
    warm = sum(not s.measured for s in sent)
    print(f"\narrivals: {len(checked.tickets)} tickets queued ({warm} of them in the warm-up) in "
          f"{max(s.sent_at for s in sent) - sent[0].sent_at:.1f} s; measured ones sent behind schedule: "
          f"p99 {percentile(lags, 0.99) * 1000:.0f} ms, max {max(lags) * 1000:.0f} ms; "
          f"requests asked again (503 or a closed connection): {sum(s.retries for s in sent)}; "
          f"refused even so: {len(failures)}{(', e.g. ' + failures[0]) if failures else ''}")
    if percentile(lags, 0.99) > TARGETS["lag_p99"]:
        print("  THE RATE WAS NOT KEPT UP WITH: what follows is a saturated service on this machine")
    served, told, bot_due, bot_told, levels, never = [], [], [], [], Counter(), 0
    for game_id, ticket_ids in checked.named.items():
        record = checked.games.get(game_id)
        if record is None:
            continue
        made = record.created_at_ms / 1000
        group = [checked.tickets[t] for t in ticket_ids]
        learned = [client_of(t).learned_at for t in group]
        never += learned.count(None)
        if not client_of(max(group, key=lambda t: t.created_at)).measured:
            continue
        if any(record.match.bots):
            (ticket,) = group
            bot_due.append(made - ticket.bot_at)
            if None not in learned:
                bot_told.append(learned[0] - (client_of(ticket).sent_at + ticket.bot_after))
            levels.update(level for level in record.match.bots if level)
        else:
            last = max(group, key=lambda t: t.created_at)
            served.append(made - last.created_at)
            if None not in learned:
                told.append(max(learned) - client_of(last).sent_at)
    print(f"pairs ({SEATS[options.variant]} tickets a match), those completed after the warm-up: {len(served)} matches")
    print(f"  last ticket's arrival -> match (service clock): {ms(served)}; target p99 <= "
          f"{TARGETS['pair_p99']:.0f} s: {'met' if percentile(served, 0.99) <= TARGETS['pair_p99'] else 'NOT MET'}")
    print(f"  last ticket sent -> every client of the match knows: {ms(told)}")
    if bot_due or options.bot_share:
        print(f"bot fallbacks: {len(bot_due)} matches, levels {dict(levels)}")
        print(f"  match after the ticket's bot time (service clock): {ms(bot_due)}; target max <= "
              f"{TARGETS['bot_max']:.0f} s: {'met' if max(bot_due, default=0) <= TARGETS['bot_max'] else 'NOT MET'}")
        print(f"  client knows, after sending + bot_after_seconds: {ms(bot_told)}")
    unmatched = [t for t in checked.tickets.values() if t.status != "matched"]
    people = sum(not t.bot_after for t in checked.tickets.values())
    left_over = people % SEATS[options.variant]
    print(f"queued tickets not matched: {len(unmatched)} ({left_over} left over by the count: lost "
          f"{max(len(unmatched) - left_over, 0)}); matches: {len(checked.games)}; "
          f"inconsistencies (double matches, seats not their tickets, matches no ticket names): "
          f"{len(checked.problems)}{(', e.g. ' + checked.problems[0]) if checked.problems else ''}")
    matched = sum(t.status == "matched" for t in checked.tickets.values())
    print(f"clients that never learned of their ticket's match: {never}")
    others = {outcome: count for outcome, count in checked.tokens.items() if outcome != "ok"}
    print(f"tokens that open their seat: {checked.tokens['ok']} of {matched} matched tickets{' ' + str(others) if others else ''}")
    count = options.tickets
    cpu = {name: after.cpu[name] - before.cpu[name] for name in before.cpu}
    print(f"over {seconds:.1f} s (the first measured arrival to the last match), per measured ticket: CPU "
          + ", ".join(f"{name} {used * 1000 / count:.2f} ms" for name, used in cpu.items())
          + f" ({sum(cpu.values()) / seconds:.2f} cores in all)")
    trips = {name: after.trips.get(name, 0) - before.trips.get(name, 0) for name in ("gunicorn", "worker")}
    commands = changed(before.commands, after.commands)
    top = sorted(commands.items(), key=lambda item: -item[1])[:8]
    print(f"  Redis round trips: gunicorn {trips['gunicorn'] / count:.1f}, worker {trips['worker'] / count:.1f}; "
          f"Redis commands (scripts' own included): {sum(commands.values()) / count:.1f} "
          f"({', '.join(f'{name} {calls / count:.2f}' for name, calls in top)})")
    if options.redis_url:
        print("  (a shared Redis: its commands include everyone else's)")


def print_store_errors(log: str) -> None:
    """What the service logged when a Redis call failed (its 503s), by kind."""
    kinds = Counter(re.sub(r"\d+", "N", message) for message in re.findall(r'"msg": "game store unavailable: ([^"]*)"', log))
    if kinds:
        print(f"  store errors the service logged (answered 503 store_unavailable): {dict(kinds.most_common(3))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tickets", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=500.0, help="tickets per second")
    parser.add_argument("--clients", type=int, default=200, help="client threads, each on its own connection")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--variant", choices=sorted(SEATS), default="classic")
    parser.add_argument("--rated", action="store_true", help="rated tickets (every player is new: 1500)")
    parser.add_argument("--bot-share", type=float, default=0.0, help="share of tickets with a bot fallback")
    parser.add_argument("--bot-after", type=int, default=1, help="their bot_after_seconds")
    parser.add_argument("--warmup-seconds", type=float, default=2.0,
                        help="tickets sent this long at the rate before the measured ones (checked, not measured)")
    parser.add_argument("--redis-url", help="use this Redis instead of a private redis-server")
    options = parser.parse_args()
    print(f"{datetime.datetime.now().isoformat(timespec='seconds')}  {platform.node()}: {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}; load average {callbacks.load_average()} at start")
    print(f"{options.tickets} {'rated' if options.rated else 'unrated'} {options.variant} tickets at "
          f"{options.rate:.0f}/s from {options.clients} clients, {options.bot_share:.0%} with bot_after_seconds "
          f"{options.bot_after}; {options.workers} gunicorn workers and one ginrummy worker")
    with tempfile.TemporaryDirectory() as directory, bench_redis(Path(directory), options.redis_url) as store:
        here, url, prefix = Path(directory), store.url, store.prefix
        counted = here / "round-trips"
        counted.mkdir()
        common = {"REDIS_URL": url, "KEY_PREFIX": prefix, "LOG_LEVEL": "WARNING", "WEBHOOK_SECRET": new_secret(),
                  **round_trips.environment(counted, ROOT)}
        server = GunicornServer(here / "service", common, workers=options.workers, ready_path="/readyz")
        worker = WorkerProcess({**common, "SERVER_SECRET": TEST_SERVER_SECRET}, here / "worker.log", arguments=())
        try:
            server.start()
            worker.start()
            with redis.Redis.from_url(url) as client:
                sent, before, after, seconds = run_tickets(options, server.port, server, worker, client,
                                                           store.private, counted)
                checked = check(client, prefix, server.port)
                report(options, sent, checked, before, after, seconds)
                print_store_errors(server.log_text() + worker.log_text())
        finally:
            worker.stop()
            server.stop()
    print(f"load average {callbacks.load_average()} at the end")


if __name__ == "__main__":
    main()
