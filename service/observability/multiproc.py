"""The metric files of gunicorn workers that ended, folded into archive files.

In multiprocess mode prometheus_client keeps each process's values in files named
``<type>_<pid>.db`` (gauges: ``gauge_<mode>_<pid>.db``) and a scrape adds up every file. Its
``mark_process_dead`` only removes the live gauges of a dead process: the counters and
histograms of every recycled worker stay, so the directory and the time of each scrape grow
with every recycle (585 files after 290 recycles made a scrape take 65 ms instead of 15).

``retire_process(pid)`` (the gunicorn master's ``child_exit`` hook) adds a dead process's values
into one archive file per type and mode (``counter_archive.db``, ``histogram_archive.db``,
``gauge_max_archive.db``...) and deletes its files, so the totals stay exact and the directory
holds the live workers' files plus at most one archive per type and mode. Scrapes read the
directory under a shared lock (``collect_all``) and the merge takes it exclusively, so a scrape
never sees a dead process's values twice (in its file and in the archive) or not at all.

A file of zero bytes holds nothing yet: prometheus_client creates each file before it sizes
it, so a scrape can meet a new worker's file in that state (and reading it would fail the whole
scrape), and a worker killed at that moment leaves it so. Scrapes skip such files and retiring
removes them.

Gauges in mode ``all`` report one series per process, dead ones included, by prometheus_client's
definition: their files are left alone (the service defines no gauges).
"""
from __future__ import annotations

import contextlib
import fcntl
import glob
import logging
import os
from collections.abc import Iterator

from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.multiprocess import MultiProcessCollector

MULTIPROC_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
ARCHIVE = "archive"
# Not *.db: prometheus_client reads every *.db file of the directory as metrics.
LOCK_FILE = ".retire.lock"
TEMPORARY_SUFFIX = ".tmp"

# How a dead process's value combines with the archive's, per file kind.
_ADDED = ("counter", "histogram", "summary", "gauge_sum")
_LARGEST, _SMALLEST, _LATEST = "gauge_max", "gauge_min", "gauge_mostrecent"
# Removed, as mark_process_dead does: they report live processes only.
_LIVE_GAUGES = ("gauge_livesum", "gauge_livemax", "gauge_livemin", "gauge_liveall", "gauge_livemostrecent")

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _locked(directory: str, exclusive: bool) -> Iterator[None]:
    descriptor = os.open(os.path.join(directory, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def _kind_and_owner(file_name: str) -> tuple[str, str] | None:
    """(``counter``/``gauge_max``/..., the pid or ``archive``) of a metric file's name."""
    if not file_name.endswith(".db"):
        return None
    kind, _, owner = file_name[:-len(".db")].rpartition("_")
    return (kind, owner) if kind else None


def retire_process(pid: int, directory: str | None = None) -> None:
    """Fold the metric files of process ``pid``, which has ended, into the archive files
    of ``directory`` (default: PROMETHEUS_MULTIPROC_DIR) and delete them.

    Call it only once the process can no longer write (gunicorn's ``child_exit`` runs after
    the worker was reaped and before any new worker can take its pid). Does nothing when no
    directory is configured. Never raises: it runs in the gunicorn master, where an exception
    would stop the reaping of workers; a file it cannot fold is left where it is (still counted
    by every scrape) and a warning is logged."""
    directory = directory or os.environ.get(MULTIPROC_DIR_ENV)
    if not directory:
        return
    try:
        _retire(pid, directory)
    except Exception as error:  # noqa: BLE001 - OSError, or a torn file (struct.error, RuntimeError...)
        logger.warning("metric files of process %d not folded: %s: %s", pid, type(error).__name__, error)


def _retire(pid: int, directory: str) -> None:
    with _locked(directory, exclusive=True):
        for path in sorted(glob.glob(os.path.join(directory, f"*_{pid}.db"))):
            named = _kind_and_owner(os.path.basename(path))
            if named is None or named[1] != str(pid):
                continue
            kind = named[0]
            if kind in _LIVE_GAUGES or not _recorded(path):
                os.remove(path)
            elif kind in (*_ADDED, _LARGEST, _SMALLEST, _LATEST):
                _fold(path, os.path.join(directory, f"{kind}_{ARCHIVE}.db"), kind)
                os.remove(path)


def _recorded(path: str) -> bool:
    """Whether a metric file has been sized by its writer (files only grow from there)."""
    try:
        return os.path.getsize(path) > 0
    except FileNotFoundError:
        return False


def _fold(dead: str, archive: str, kind: str) -> None:
    """Write ``archive`` anew with ``dead``'s values combined into it (replaced atomically)."""
    values: dict[str, tuple[float, float]] = {}
    if os.path.exists(archive):
        values = {key: (value, stamp) for key, value, stamp, _ in MmapedDict.read_all_values_from_file(archive)}
    for key, value, stamp, _ in MmapedDict.read_all_values_from_file(dead):
        values[key] = _combined(kind, values.get(key), (value, stamp))
    temporary = archive + TEMPORARY_SUFFIX
    with contextlib.suppress(FileNotFoundError):
        os.remove(temporary)  # left by a merge that was interrupted
    written = MmapedDict(temporary)
    try:
        for key, (value, stamp) in values.items():
            written.write_value(key, value, stamp)
    finally:
        written.close()
    os.replace(temporary, archive)


def _combined(kind: str, kept: tuple[float, float] | None, dead: tuple[float, float]) -> tuple[float, float]:
    if kept is None:
        return dead
    if kind == _LARGEST:
        return max(kept, dead, key=lambda pair: pair[0])
    if kind == _SMALLEST:
        return min(kept, dead, key=lambda pair: pair[0])
    if kind == _LATEST:
        return max(kept, dead, key=lambda pair: pair[1])
    return kept[0] + dead[0], max(kept[1], dead[1])


class RetiringCollector(MultiProcessCollector):
    """prometheus_client's multiprocess collector, reading the directory under the shared
    lock so that a merge in progress is never seen half done."""

    def collect(self):
        with _locked(self._path, exclusive=False):
            files = [path for path in glob.glob(os.path.join(self._path, "*.db")) if _recorded(path)]
            return list(self.merge(files, accumulate=True))
