"""Redis round trips of the service's own processes, counted on their wire.

A benchmark that runs gunicorn and the worker as separate processes cannot count what they
send from outside: INFO commandstats counts every command, those a script runs and each one
of a pipeline included. This counts what tests/api/test_round_trips.py counts in process:
each write of a command, a pipeline or a script call to a Redis socket is one round trip.

``environment(directory)`` gives the settings that make a process started with them count:
its ``sitecustomize`` (written into ``directory``) wraps redis-py's ``send_packed_command``
as soon as redis-py is imported (never earlier: gunicorn's gevent workers patch the standard
library first), and each process adds its writes to a file of its own. ``totals(directory)``
reads them: {pid: writes}. The wrapper costs a lock and a memory write per round trip.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import mmap
import os
import struct
import sys
import threading
from pathlib import Path

DIRECTORY_ENV = "BENCH_ROUND_TRIPS_DIR"
COUNTER = struct.Struct("q")
SITECUSTOMIZE = """import os
if os.environ.get({env!r}):
    from bench.round_trips import install
    install(os.environ[{env!r}])
"""


def environment(directory: Path, repo: Path) -> dict[str, str]:
    """PYTHONPATH and the counter directory for a process to count its round trips into
    ``directory`` (``repo``: where ``bench`` is importable from)."""
    site = directory / "site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE.format(env=DIRECTORY_ENV), encoding="utf-8")
    return {"PYTHONPATH": f"{site}{os.pathsep}{repo}", DIRECTORY_ENV: str(directory)}


def totals(directory: Path) -> dict[int, int]:
    """Round trips so far of every process that counted into ``directory``, by pid."""
    counted = {}
    for path in directory.glob("*.count"):
        data = path.read_bytes()
        if len(data) >= COUNTER.size:
            counted[int(path.stem)] = COUNTER.unpack_from(data)[0]
    return counted


class _Counter:
    """This process's count, in a file of its own (a forked child opens its own)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.pid = None
        self.lock = None
        self.map = None

    def add(self) -> None:
        if self.pid != os.getpid():
            self._open()
        with self.lock:
            COUNTER.pack_into(self.map, 0, COUNTER.unpack_from(self.map)[0] + 1)

    def _open(self) -> None:
        self.pid = os.getpid()
        self.lock = threading.Lock()
        path = Path(self.directory) / f"{self.pid}.count"
        path.write_bytes(bytes(COUNTER.size))
        with path.open("r+b") as file:
            self.map = mmap.mmap(file.fileno(), COUNTER.size)


class _WrapOnImport(importlib.abc.MetaPathFinder):
    """Finds ``redis.connection`` through the other finders and wraps it once it is loaded."""

    def __init__(self, counter: _Counter) -> None:
        self.counter = counter

    def find_spec(self, fullname, path, target=None):
        if fullname != "redis.connection":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            _wrap(module.AbstractConnection, self.counter)
            sys.meta_path.remove(self)

        spec.loader.exec_module = exec_module
        return spec


def _wrap(connection_class, counter: _Counter) -> None:
    send = connection_class.send_packed_command

    def send_packed_command(self, command, check_health=True):
        counter.add()
        return send(self, command, check_health)

    connection_class.send_packed_command = send_packed_command


def install(directory: str) -> None:
    """Count this process's round trips into ``directory`` (from its sitecustomize)."""
    sys.meta_path.insert(0, _WrapOnImport(_Counter(directory)))
