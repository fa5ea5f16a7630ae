"""Gunicorn settings for the service, every one overridable from the environment.

Used as ``gunicorn -c python:service.gunicorn_conf service.wsgi:app`` (the image's CMD).
Gunicorn reads this module once in the master process; a malformed number in the
environment stops the start with a ValueError that names the variable.

| variable                     | default                     |
|------------------------------|-----------------------------|
| HOST, PORT                   | 0.0.0.0, 8000               |
| WEB_CONCURRENCY              | 2 x usable CPUs + 1, max 8  |
| GUNICORN_THREADS             | 8                           |
| GUNICORN_WORKER_CONNECTIONS  | GUNICORN_THREADS            |
| GUNICORN_TIMEOUT             | 60                          |
| GUNICORN_GRACEFUL_TIMEOUT    | 30                          |
| GUNICORN_KEEPALIVE           | 5                           |
| GUNICORN_MAX_REQUESTS        | 20000 (0 turns it off)      |
| GUNICORN_MAX_REQUESTS_JITTER | 2000                        |
| FORWARDED_ALLOW_IPS          | 127.0.0.1,::1               |
| LOG_LEVEL                    | info                        |
| PROMETHEUS_MULTIPROC_DIR     | a fresh temporary directory |
"""
from __future__ import annotations

import importlib
import math
import os
import shutil
import tempfile
from pathlib import Path

# Each worker process holds its own copy of the app and its own Redis connection pool;
# concurrency inside a worker comes from threads, so past a handful of processes more
# workers cost memory without adding throughput.
MAX_DEFAULT_WORKERS = 8

# With several workers, prometheus_client must keep its values in files that every worker
# writes, so that /metrics reports the sum whichever worker answers the scrape
# (service/observability/metrics.py). It picks that mode when first imported, from this
# variable, so the master sets it before any worker exists, and never imports
# prometheus_client earlier itself.
METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"

# The directory on_starting made (None: the environment named one), for on_exit to remove.
_made_metrics_dir: Path | None = None

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
    """Gunicorn's usual 2 x CPUs + 1, capped at MAX_DEFAULT_WORKERS."""
    return min(2 * usable_cpus() + 1, MAX_DEFAULT_WORKERS)


# Listen on every interface by default: in a container the port is reached from outside.
bind = [f"{os.environ.get('HOST', '0.0.0.0')}:{env_int('PORT', 8000)}"]

workers = env_int("WEB_CONCURRENCY", default_workers())

# Long-poll requests (GET .../events?wait=S) hold their request for up to 30 s. With sync
# workers each one would block a whole process; gthread parks it in one of the worker's
# threads, and idle keep-alive connections wait in the worker's poller without any thread.
worker_class = "gthread"
threads = env_int("GUNICORN_THREADS", 8)
# A gthread worker keeps accepting while it has connection slots (1,000 by default), and a
# keep-alive connection stays with the worker that accepted it: one worker ended up serving
# every client while the others idled (bench/README.md). With as many slots as threads, a
# busy worker leaves further connections to the others; a connection beyond every worker's
# slots waits in the listen backlog, as its request would wait for a thread anyway.
worker_connections = env_int("GUNICORN_WORKER_CONNECTIONS", threads)

# In a gthread worker the heartbeat comes from the main loop, not from request threads, so
# this only catches a worker whose loop is stuck; it stays well above the 30 s long-poll
# so that a slow Redis during a long poll never gets a healthy worker killed.
timeout = env_int("GUNICORN_TIMEOUT", 60)

# On SIGTERM (Kubernetes, docker stop) workers stop accepting and finish what is in flight
# for up to this long; a long-poll in flight lasts at most 30 s more, so 30 lets every one
# end normally. Kubernetes' terminationGracePeriodSeconds must exceed preStop + this.
graceful_timeout = env_int("GUNICORN_GRACEFUL_TIMEOUT", 30)

# Long enough for a client's next request (typically the next long-poll) to reuse the
# connection. Behind a proxy that keeps idle upstream connections open longer, set this
# above the proxy's idle timeout, or the proxy may send on a connection being closed.
keepalive = env_int("GUNICORN_KEEPALIVE", 5)

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
    """Before the first worker: give prometheus_client an empty directory for its files.

    A directory named in the environment is created if needed and emptied (files left by a
    previous run would be added to this run's figures); otherwise a fresh one is made."""
    global _made_metrics_dir
    directory = os.environ.get(METRICS_DIR_ENV)
    if not directory:
        _made_metrics_dir = Path(tempfile.mkdtemp(prefix="ginrummy-metrics-"))
        os.environ[METRICS_DIR_ENV] = str(_made_metrics_dir)
    else:
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink()
    # Import the application's modules once here, after prometheus_client can see the
    # directory: every worker, recycled ones included, then forks with them loaded instead of
    # spending ~0.6 s importing. The app itself is still built in each worker.
    importlib.import_module("service.app")


def child_exit(server, worker) -> None:
    """A worker ended (max_requests, crash, shutdown): drop its live gauges from /metrics."""
    from prometheus_client import multiprocess  # late: see METRICS_DIR_ENV

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server) -> None:
    """Remove the metrics directory if on_starting made it."""
    if _made_metrics_dir is not None:
        shutil.rmtree(_made_metrics_dir, ignore_errors=True)


# Gunicorn answers requests it cannot parse (a request line over its limit, a malformed
# header) itself, before the app runs, with an HTML page. Clients of this API branch on
# problem+json codes, so those answers use the same format. Gunicorn has no hook for this;
# its workers call ``gunicorn.util.write_error``, which the workers inherit replaced from here.
PROTOCOL_PROBLEMS = {
    400: ("invalid_request", "the request is not valid HTTP (request line or headers)"),
    403: ("forbidden", "the request was refused by the HTTP server"),
    414: ("uri_too_long", "the request line is longer than the server accepts"),
    417: ("expectation_failed", "the server cannot meet the Expect header"),
    431: ("headers_too_large", "the request headers are larger than the server accepts"),
    501: ("not_implemented", "the request uses an HTTP feature the server does not support"),
}


def write_protocol_problem(sock, status_int: int, reason: str, mesg: str) -> None:
    """Gunicorn's error writer, answering problem+json. The parser's message is not echoed:
    it can quote the client's request line or headers (tokens among them)."""
    from gunicorn.util import write_nonblock

    from service.problems import PROBLEM_MIMETYPE, problem_body

    code, detail = PROTOCOL_PROBLEMS.get(status_int, ("internal_error", "the server could not answer"))
    body = problem_body(status_int, code, reason, detail).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: {PROBLEM_MIMETYPE}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1")
    write_nonblock(sock, head + body)


def _answer_protocol_errors_as_problems() -> None:
    import gunicorn.util

    gunicorn.util.write_error = write_protocol_problem


_answer_protocol_errors_as_problems()
