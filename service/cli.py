"""The ``ginrummy`` command.

- ``ginrummy serve [--host H] [--port P]``: run the service with Werkzeug's threaded server
  (quick start and development; production runs gunicorn; see service/dev_server.py).
  Without REDIS_URL the games live in this process (memory://).
- ``ginrummy openapi [--output PATH]``: write the OpenAPI document (default
  ``openapi/openapi.json``), the file checked in with the code.
- ``ginrummy worker [--host H]``: deliver webhooks and fire turn deadlines (see
  service/webhooks/worker.py), and run the background work (service/background: timers of
  quick play and invites, the feed's consumers), with /healthz, /readyz and /metrics on
  WORKER_PORT. Reads the same environment as the service; the other options shorten its
  timings (tests), the background runner's too.
- ``ginrummy verify RECORD.json`` (``-``: standard input): check a finished match's record (the
  commitment, every deck against the seeds, every action through the engine; see
  docs/fairness.md). Exit 0 when it is honest, 1 naming the first mismatch, 2 when the file
  cannot be read as JSON.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from service import dev_server
from service.api.docs.routes import openapi_text
from service.app import create_app
from service.background.runner import RunnerSettings
from service.background.setup import background_runner
from service.store.areas import redis_areas
from service.games.setup import game_service
from service.store import store_from_url
from service.config import EMBEDDED_STORE_URL, Config, ConfigError
from service.records.verify import verify
from service.store.feed import DELIVERY_GROUP
from service.webhooks.process import run_worker

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_OPENAPI_PATH = Path("openapi") / "openapi.json"


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: the process's). Returns the exit status."""
    parser = argparse.ArgumentParser(prog="ginrummy", description="Gin Rummy game service")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the service (development server)")
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    openapi = commands.add_parser("openapi", help="write the OpenAPI document")
    openapi.add_argument(
        "--output", type=Path, default=DEFAULT_OPENAPI_PATH, help=f"file to write (default {DEFAULT_OPENAPI_PATH})"
    )
    worker = commands.add_parser("worker", help="deliver webhooks and fire turn deadlines")
    worker.add_argument("--host", default="0.0.0.0", help="address of /healthz, /readyz, /metrics (default 0.0.0.0)")
    for option in WORKER_TIMINGS:
        worker.add_argument(f"--{option.replace('_', '-')}", type=float, dest=option, help="seconds (tests)")
    checker = commands.add_parser("verify", help="check a finished match's record (docs/fairness.md)")
    checker.add_argument("record", help="the record's JSON (GET /v1/games/{id}/record), or - for standard input")
    args = parser.parse_args(argv)
    if args.command == "verify":
        return run_verify_command(args.record)
    if args.command == "worker":
        return run_worker_command(args)
    if args.command == "serve":
        return run_serve_command(args)
    write_openapi(args.output)
    print(f"wrote {args.output}")
    return 0


# WorkerSettings fields a command line may shorten (tests); unset ones keep their defaults. Those
# that RunnerSettings has too apply to the background runner as well.
WORKER_TIMINGS = ("lease_seconds", "poll_seconds", "block_seconds", "backoff_base_seconds", "backoff_cap_seconds")
RUNNER_TIMINGS = ("lease_seconds", "poll_seconds", "block_seconds")


def run_serve_command(args: argparse.Namespace) -> int:
    """``ginrummy serve``: exit status 2 with a message for a setting it cannot use."""
    try:
        app = create_app()
    except (ConfigError, ValueError) as error:
        print(f"ginrummy serve: {error}", file=sys.stderr)
        return 2
    # The app already writes one JSON line per request; Werkzeug's own line would repeat it,
    # and its start-up banner is one the service says itself.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    print(f"ginrummy serve: listening on http://{args.host}:{args.port} (interactive docs at /docs; Ctrl-C stops)",
          file=sys.stderr, flush=True)
    dev_server.serve(app, args.host, args.port)
    return 0


def run_worker_command(args: argparse.Namespace) -> int:
    """``ginrummy worker``: exit status 2 with a message for a setting it cannot use or a
    port it cannot listen on."""
    try:
        config = Config.from_env()
        timings = {name: getattr(args, name) for name in WORKER_TIMINGS if getattr(args, name) is not None}
        store = store_from_url(config.redis_url, config.key_prefix, config.max_events_per_game)
        games = game_service(config, store)

        runner_settings = RunnerSettings(**{name: value for name, value in timings.items() if name in RUNNER_TIMINGS})

        def background(client, count_timer):
            return background_runner(config, games, redis_areas(store, client, config.key_prefix,
                                                                config.key_stream_retention_seconds), runner_settings,
                                     count_timer, read_elsewhere=(DELIVERY_GROUP,))

        return run_worker(config, host=args.host, background=background, **timings)
    except (ConfigError, ValueError, OSError) as error:
        print(f"ginrummy worker: {error}", file=sys.stderr)
        return 2


def run_verify_command(source: str) -> int:
    """``ginrummy verify``: 0 for an honest record, 1 naming its first mismatch, 2 when it
    cannot be read as JSON."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        record = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        print(f"ginrummy verify: cannot read {source} as JSON: {error}", file=sys.stderr)
        return 2
    mismatch = verify(record)
    if mismatch is not None:
        print(f"ginrummy verify: MISMATCH at {mismatch}", file=sys.stderr)
        return 1
    print(f"ginrummy verify: {record.get('id', 'the record')} is honest: the commitment, {len(record['cuts'])} cut(s) and "
          f"{len(record['hands'])} deal(s) follow from the seeds, and the engine replays all {record['steps']} "
          f"steps to the recorded result")
    return 0


def write_openapi(path: Path) -> None:
    """Write the OpenAPI document to ``path``. It does not depend on the environment: the
    document is built on the embedded store, so no Redis is needed."""
    app = create_app({"REDIS_URL": EMBEDDED_STORE_URL})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(openapi_text(app), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
