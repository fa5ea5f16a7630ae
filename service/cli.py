"""The ``ginrummy`` command.

- ``ginrummy serve [--host H] [--port P]``: run the service with Werkzeug's threaded server
  (quick start and development; production runs gunicorn). Without REDIS_URL the games live
  in this process (memory://).
- ``ginrummy openapi [--output PATH]``: write the OpenAPI document (default
  ``openapi/openapi.json``), the file checked in with the code.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from werkzeug.serving import run_simple

from service.api.docs.routes import openapi_text
from service.app import create_app
from service.config import EMBEDDED_STORE_URL

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
    args = parser.parse_args(argv)
    if args.command == "serve":
        # The app already writes one JSON line per request; Werkzeug's own line would repeat it.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        run_simple(args.host, args.port, create_app(), threaded=True)
        return 0
    write_openapi(args.output)
    print(f"wrote {args.output}")
    return 0


def write_openapi(path: Path) -> None:
    """Write the OpenAPI document to ``path``. It does not depend on the environment: the
    document is built on the embedded store, so no Redis is needed."""
    app = create_app({"REDIS_URL": EMBEDDED_STORE_URL})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(openapi_text(app), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
