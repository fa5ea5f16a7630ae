"""A lean webhook receiver for ``bench/load.py --callbacks``, in a process of its own.

    WEBHOOK_SECRET=whsec_... python -m bench.callback_receiver [--port 0] [--verify-every 1]

The receiver of the tests (tests/webhooks/receiver.py) keeps every request whole and runs
a thread per connection; at the bench's pace (hundreds of deliveries a second, each on a
new connection, for minutes) that would make the receiver, not the worker, the limit. This
one runs on asyncio (a protocol, no thread or task per connection) with uvloop's event loop,
answers 200 as soon as a request is read, and keeps five fields per request. It stands for
an integrator's endpoint, which would run on another machine: whatever CPU it takes on this
one is taken from the service measured, so it is kept lean (uvloop cut its CPU per request
by ~30 % against asyncio's own loop). It verifies the signature of every ``--verify-every``-th request with the
standardwebhooks library (about 10 microseconds each: the default verifies them all).

Once listening it prints its port on stdout. Then it reads commands on stdin, one a line,
and answers each with one line: ``count`` (requests so far) and ``dump PATH`` (writes every
request so far to PATH as JSON lines ``[webhook-id, arrived, game id, version, verified]``
and answers how many). ``arrived`` is ``time.monotonic()`` once the body was read: on Linux
that is CLOCK_MONOTONIC, so it compares with the same clock read in another process.
``verified`` is null for a request that was not checked. End of input stops the process.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time

import uvloop
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}"
REFUSAL = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
MAX_HEAD_BYTES = 16384

Record = tuple[str, float, str, int, "bool | None"]


class LeanReceiver:
    """Records deliveries as :data:`Record` tuples."""

    def __init__(self, secret: str, verify_every: int) -> None:
        self.records: list[Record] = []
        self._verifier = Webhook(secret)
        self._verify_every = verify_every

    def record(self, headers: dict[str, str], body: str, arrived: float) -> None:
        try:
            data = json.loads(body)["data"]
            game, version = str(data["game_id"]), int(data["version"])
        except (ValueError, KeyError, TypeError):
            game, version = "", -1  # counted as unexpected by the bench
        verified = None
        if len(self.records) % self._verify_every == 0:
            try:
                self._verifier.verify(body, headers)
                verified = True
            except (WebhookVerificationError, ValueError):
                verified = False
        self.records.append((headers.get("webhook-id", ""), arrived, game, version, verified))

    def dump(self, path: str) -> int:
        records = self.records[:]  # appended to by the event loop meanwhile
        with open(path, "w") as output:
            output.writelines(json.dumps(record) + "\n" for record in records)
        return len(records)


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection, requests answered in order (a protocol object rather than
    asyncio streams: no task per connection, about half the CPU per request)."""

    def __init__(self, receiver: LeanReceiver) -> None:
        self.receiver = receiver
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while self.transport is not None:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_HEAD_BYTES:
                    self.refuse()
                return
            headers = {}
            for line in self.buffer[:end].decode("latin-1").split("\r\n")[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            try:
                length = int(headers.get("content-length", "0"))
            except ValueError:
                self.refuse()
                return
            if len(self.buffer) < end + 4 + length:
                return  # the rest of the body is on its way
            body = self.buffer[end + 4:end + 4 + length].decode(errors="replace")
            self.buffer = self.buffer[end + 4 + length:]
            self.receiver.record(headers, body, time.monotonic())
            self.transport.write(ANSWER)
            if headers.get("connection", "").lower() == "close":
                self.transport.close()
                self.transport = None

    def refuse(self) -> None:
        self.transport.write(REFUSAL)
        self.transport.close()
        self.transport = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


def serve_commands(receiver: LeanReceiver, stop: threading.Event) -> None:
    """Answer the commands on stdin until it ends."""
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "count":
            answer = str(len(receiver.records))
        elif command == "dump":
            answer = str(receiver.dump(argument))
        else:
            answer = f"unknown command {command!r}"
        print(answer, flush=True)
    stop.set()


async def main(options: argparse.Namespace) -> None:
    receiver = LeanReceiver(os.environ["WEBHOOK_SECRET"], options.verify_every)
    server = await asyncio.get_running_loop().create_server(
        lambda: Connection(receiver), "127.0.0.1", options.port, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    stop = threading.Event()
    threading.Thread(target=serve_commands, args=(receiver, stop), daemon=True).start()
    async with server:
        while not stop.is_set():
            await asyncio.sleep(0.2)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--verify-every", type=int, default=1, help="verify one request in this many (1: all)")
    uvloop.run(main(parser.parse_args()))
