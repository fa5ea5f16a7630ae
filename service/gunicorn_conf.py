"""Gunicorn settings for the service, every one overridable from the environment.

Used as ``gunicorn -c python:service.gunicorn_conf service.wsgi:app`` (the image's CMD).
Gunicorn reads this module once in the master process; a malformed number in the
environment stops the start with a ValueError that names the variable.

| variable                     | default                                        |
|------------------------------|------------------------------------------------|
| HOST, PORT                   | 0.0.0.0, 8000                                  |
| WEB_CONCURRENCY              | usable CPUs (one gevent process per core)      |
| GUNICORN_WORKER_CONNECTIONS  | 8192, lowered to fit the open-files limit      |
| LONG_POLL_MAX_WAITERS        | 3/4 of GUNICORN_WORKER_CONNECTIONS (read by the app) |
| GUNICORN_TIMEOUT             | 60                                             |
| GUNICORN_GRACEFUL_TIMEOUT    | 30                                             |
| GUNICORN_KEEPALIVE           | 5 (at least 1)                                 |
| GUNICORN_MAX_REQUESTS        | 20000 (0 turns it off)                         |
| GUNICORN_MAX_REQUESTS_JITTER | 2000                                           |
| FORWARDED_ALLOW_IPS          | 127.0.0.1,::1                                  |
| LOG_LEVEL                    | info                                           |
| PROMETHEUS_MULTIPROC_DIR     | a fresh temporary directory                    |

Workers are gevent workers (service/gunicorn_worker.py): every connection and request is a
greenlet, so a long-poll waiting 30 s costs a few kilobytes and no thread, and one process
per core serves thousands of clients. What a client can make a worker hold is bounded: at
most GUNICORN_WORKER_CONNECTIONS connections (further ones wait in the listen backlog for
this or another worker), of which at most LONG_POLL_MAX_WAITERS waiting long-polls (further
ones get 503 ``long_poll_capacity`` with Retry-After), GUNICORN_KEEPALIVE seconds for a
request's headers to arrive (idle keep-alive included), REQUEST_BODY_TIMEOUT_SECONDS for its
body and RESPONSE_SEND_TIMEOUT_SECONDS for the client to take each part of its answer
(service/middleware/request_deadlines.py), 2 s and 1 MiB of what a client still sends read
and dropped before a close, ~128 KiB of answers in the kernel per connection and 10 s for a
closing connection's client to take them (service/gunicorn_worker.py), and 32 Redis
connections (service/store/redis_client.py).
"""
from __future__ import annotations

import atexit
import gc
import importlib
import math
import os
import resource
import shutil
import tempfile
from pathlib import Path

# Connections a worker holds at most by default (each is a greenlet and a file descriptor).
# The kernel hands a new connection to whichever worker accepts first, and under a gentle
# stream of arrivals that is mostly one of them: 5,000 long-polls opened at ~650/s on 2
# workers split ~3,660 / 1,340 (2026-12-04). So each worker may hold what the instance is
# meant to (6,144 waiters by default), and the memory limit covers both full.
DEFAULT_WORKER_CONNECTIONS = 8192
# File descriptors a worker needs besides its client connections: Redis connections (32 per
# node, service/store/redis_client.py), subscriptions, log and metrics files, the listening socket.
RESERVED_FILES = 256
# The share of a worker's connections that waiting long-polls may take by default; the rest
# stays free for moves, reads and probes.
WAITERS_SHARE = 0.75
MAX_WAITERS_ENV = "LONG_POLL_MAX_WAITERS"
# Collections of the middle generation between two full ones, in workers (see post_worker_init).
FULL_COLLECTION_EVERY = 100_000
# A worker collects its young generations at least this often (see collect_young_by_time).
YOUNG_COLLECTION_SECONDS = 0.05

# With several workers, prometheus_client must keep its values in files that every worker
# writes, so that /metrics reports the sum whichever worker answers the scrape
# (service/observability/metrics.py). It picks that mode when first imported, from this
# variable, so the master sets it before any worker exists, and never imports
# prometheus_client earlier itself.
METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"

# cgroup v2 exposes the container's CPU limit here as "<quota> <period>" or "max <period>".
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def env_int(name: str, default: int) -> int:
    """The integer in environment variable ``name``, or ``default`` when unset or empty.

    Raises ValueError naming the variable when it is set to something else."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, not {raw!r}") from None


def usable_cpus(cpu_max: Path = CGROUP_CPU_MAX) -> int:
    """How many CPUs this process can keep busy: its affinity mask, lowered by a cgroup quota.

    ``os.cpu_count()`` reports the whole node; in a container limited to one CPU on a
    32-core node it would start 65 workers that the limit then throttles."""
    cpus = len(os.sched_getaffinity(0))
    try:
        quota, period = cpu_max.read_text().split()
        return max(1, min(cpus, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):  # no cgroup v2 file, or "max": no quota
        return cpus


def default_workers() -> int:
    """One process per usable CPU: a gevent worker keeps its core busy on its own, and any
    more processes would only take turns on the same cores."""
    return usable_cpus()


def open_files_limit() -> int:
    """The most file descriptors a process of this server may open: the hard limit, to which
    on_starting raises the soft one (the master's limits pass on to the workers)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(soft, hard) if hard != resource.RLIM_INFINITY else 1 << 20


def fitting_connections(requested: int, files: int) -> int:
    """``requested``, lowered so that the connections and the other files fit in ``files``.

    Raises ValueError for fewer than 2 connections, or when the limit leaves room for less
    than 16."""
    if requested < 2:
        raise ValueError(f"environment variable GUNICORN_WORKER_CONNECTIONS must be at least 2, not {requested}")
    if files - RESERVED_FILES < 16:
        raise ValueError(f"the open-files limit ({files}) is too low for the server; raise ulimit -n")
    return min(requested, files - RESERVED_FILES)


def max_waiters(connections: int) -> int:
    """LONG_POLL_MAX_WAITERS from the environment, else WAITERS_SHARE of ``connections``.

    Raises ValueError when it would leave a worker no connection for other requests."""
    waiters = env_int(MAX_WAITERS_ENV, max(1, int(connections * WAITERS_SHARE)))
    if not 1 <= waiters < connections:
        raise ValueError(
            f"environment variable {MAX_WAITERS_ENV} must be at least 1 and below the worker's "
            f"{connections} connections (GUNICORN_WORKER_CONNECTIONS), not {waiters}"
        )
    return waiters


# Listen on every interface by default: in a container the port is reached from outside.
bind = [f"{os.environ.get('HOST', '0.0.0.0')}:{env_int('PORT', 8000)}"]

workers = env_int("WEB_CONCURRENCY", default_workers())

worker_class = "service.gunicorn_worker.Worker"
# gunicorn's gevent worker accepts one connection at a time when there are several workers
# (max_accept = 1), so a busy worker leaves new connections to the others; a full worker
# stops accepting until a connection ends.
worker_connections = fitting_connections(
    env_int("GUNICORN_WORKER_CONNECTIONS", DEFAULT_WORKER_CONNECTIONS), open_files_limit()
)
# The app reads its cap on waiting long-polls from the environment (service/config.py);
# the default is derived here, where the connections are known, and gunicorn puts it in the
# environment of the master, and so of every worker.
raw_env = [f"{MAX_WAITERS_ENV}={max_waiters(worker_connections)}"]

# The heartbeat comes from the worker's main greenlet once a second, so this only catches a
# worker whose event loop is stuck (a request computing without yielding that long).
timeout = env_int("GUNICORN_TIMEOUT", 60)

# On SIGTERM (Kubernetes, docker stop), and when retiring after max_requests, workers stop
# accepting, answer their waiting long-polls at once and finish what is in flight for up to
# this long (a move takes milliseconds; an idle keep-alive connection closes within the
# keep-alive time; a client that does not read, within RESPONSE_SEND_TIMEOUT_SECONDS).
# Kubernetes' terminationGracePeriodSeconds must exceed preStop + this.
graceful_timeout = env_int("GUNICORN_GRACEFUL_TIMEOUT", 30)

# Long enough for a client's next request (typically the next long-poll) to reuse the
# connection. Behind a proxy that keeps idle upstream connections open longer, set this
# above the proxy's idle timeout, or the proxy may send on a connection being closed.
# The gevent worker reads each request's headers under this same timeout, so it is also
# how long a client may take to send them; 0 (no keep-alive) would leave that unbounded.
keepalive = env_int("GUNICORN_KEEPALIVE", 5)
if keepalive < 1:
    raise ValueError("environment variable GUNICORN_KEEPALIVE must be at least 1: it bounds "
                     f"how long a client may take to send a request's headers, not {keepalive}")

# Recycle each worker after this many requests so that slow memory growth cannot build up;
# the jitter keeps the workers from restarting all at once. Restarts are graceful, but a
# fresh worker builds its app (~0.2 s), so under load a low figure recycles every few seconds.
max_requests = env_int("GUNICORN_MAX_REQUESTS", 20000)
max_requests_jitter = env_int("GUNICORN_MAX_REQUESTS_JITTER", 2000)

# The app writes one JSON line per request itself; gunicorn's access log would duplicate
# it in another format. Gunicorn's own messages (boot, worker exits) go to stderr.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()

# Which proxies may set X-Forwarded-Proto and friends (the scheme of Location headers).
# Behind an ingress, set it to the ingress' addresses, or "*" when only the ingress can
# reach the pods.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")

# The app is built in each worker after the fork, never in the master: a Redis connection
# made before forking would be shared by every worker.
preload_app = False

# Workers touch a heartbeat file every loop; on a disk-backed /tmp that can stall, and the
# container's root filesystem is read-only, so use the in-memory /dev/shm where there is one.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None

# The control socket (for gunicornc) would be created under $HOME, which is read-only and
# unused in a container; Kubernetes manages the process through signals instead.
control_socket_disable = True

proc_name = "ginrummy"


def on_starting(server) -> None:
    """Before the first worker: give prometheus_client an empty directory for its files,
    raise the open-files limit for the workers' connections, import the app's modules.

    A directory named in the environment is created if needed and emptied (files left by a
    previous run would be added to this run's figures); otherwise a fresh one is made, and
    removed when the master exits, even when gunicorn exits before serving (a port already
    bound), which runs no on_exit hook."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    directory = os.environ.get(METRICS_DIR_ENV)
    if not directory:
        made = tempfile.mkdtemp(prefix="ginrummy-metrics-")
        os.environ[METRICS_DIR_ENV] = made
        atexit.register(_remove_in_process, made, os.getpid())
    else:
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink()
    # Import the application's modules once here, after prometheus_client can see the
    # directory: every worker, recycled ones included, then forks with them loaded instead of
    # spending ~0.6 s importing. The app itself is still built in each worker. The gevent
    # worker class patched the standard library in this process before this hook runs
    # (service/gunicorn_worker.py), so these modules are imported patched.
    importlib.import_module("service.app")
    # What the imports made lives as long as the process: keep it out of the garbage
    # collector's full passes (gc.freeze), in the master and so in every worker forked from it.
    gc.freeze()


def post_worker_init(worker) -> None:
    """The worker has built the app: freeze what that made too, and make full collections rare.

    A worker holding thousands of waiting long-polls tracks ~100 objects for each of them,
    and a full collection scans every tracked object not frozen, pausing every request of the
    worker meanwhile (~50 ms for 2,500 waiters): ~225,000 objects of modules and app less to
    scan halves that pause. By default a full collection is considered every 10 collections
    of the middle generation; while waiters pile up (a ramp after a deploy) that is one every
    ~700 new waiters, each longer than the last (the /healthz probe saw 300-800 ms). With
    one every 100 middle collections, a ramp to 5,000 waiters still met one (/healthz 170-270
    ms); with one every 100,000 it met none (73 ms). Full passes are then all but left to
    worker recycling (max_requests): the garbage that only they free (reference cycles that
    outlived the young generations) lasts at most a worker's life. The young generations,
    which free most of the garbage, are collected as often as before, and at least every
    YOUNG_COLLECTION_SECONDS (collect_young_by_time)."""
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
    collect_young_by_time(YOUNG_COLLECTION_SECONDS)


def collect_young_by_time(seconds: float) -> None:
    """From now on, collect the young generations every ``seconds`` from this worker's event
    loop: the youngest each time, the middle one too when the collector's own rule would
    (more collections of the youngest since its last than its threshold).

    The collector starts a young collection when allocations outnumber deallocations by the
    youngest generation's threshold (700), and a deallocation counts whatever the age of the
    object freed. A stream's heartbeat frees what its last wait made and makes as much again,
    which lives until the next one: with 5,000 streams in a worker the count stays under 700
    while the youngest generation grows to ~130,000 objects in 15 s, and the collection that
    finally comes scans them all: 40-100 ms during which no request of the worker moves
    (bench/streams.py, 10,000 streams: move p99 60-126 ms, against 7-12 ms without streams).
    Collected by time, a young collection scans what 50 ms made (idle, it costs microseconds)
    and a middle one what ~0.5 s made."""
    from gevent import get_hub  # late: only workers run gevent's loop

    middle = gc.get_threshold()[1]

    def collect() -> None:
        gc.collect(1 if gc.get_count()[1] > middle else 0)

    timer = get_hub().loop.timer(seconds, seconds)
    timer.ref = False  # the worker's loop may end while it runs
    timer.start(collect)


def child_exit(server, worker) -> None:
    """A worker ended (max_requests, crash, shutdown): fold its metric files into the archive,
    so recycled workers neither lose their counts nor pile up files that every scrape reads."""
    from service.observability.multiproc import retire_process  # late: see METRICS_DIR_ENV

    retire_process(worker.pid)


def _remove_in_process(directory: str, owner: int) -> None:
    """Remove ``directory`` when the process exiting is ``owner``: workers forked from the
    master inherit its exit handlers and exit while the master still serves."""
    if os.getpid() == owner:
        shutil.rmtree(directory, ignore_errors=True)


# Gunicorn answers requests it cannot parse (a request line over its limit, a malformed
# header) itself, before the app runs, with an HTML page; these answers are problem+json
# (service/middleware/protocol_problems.py). Gunicorn has no hook for this; its workers call
# ``gunicorn.util.write_error``, which the workers inherit replaced from here.
def write_protocol_problem(sock, status_int: int, reason: str, mesg: str) -> None:
    """Gunicorn's error writer, answering problem+json. Neither the parser's message nor its
    reason is used: the reason is "Bad Request" for a 501 too."""
    from gunicorn.util import write_nonblock

    from service.middleware.protocol_problems import protocol_problem

    phrase, headers, body = protocol_problem(status_int)
    head = f"HTTP/1.1 {status_int} {phrase}\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers)
    write_nonblock(sock, (head + "\r\n").encode("latin-1") + body)


def _answer_protocol_errors_as_problems() -> None:
    import gunicorn.util

    gunicorn.util.write_error = write_protocol_problem


_answer_protocol_errors_as_problems()
