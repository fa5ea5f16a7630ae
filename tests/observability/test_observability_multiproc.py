"""Metric files of dead workers folded into archive files: totals exact, directory bounded.

The files are written the way prometheus_client's multiprocess mode writes them (one file per
type and process, values under ``mmap_key`` keys) and read back with its own collector."""
from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from service.observability.multiproc import RetiringCollector, retire_process

REQUESTS = ("http_requests", "http_requests_total", ("status",))
LATENCY = ("latency_seconds", "latency_seconds_bucket", ("le",))


def write(directory: Path, file_name: str, values: dict[tuple, float], timestamp: float = 0.0) -> None:
    """Add ``values`` ({(metric, sample, label names, label values): value}) to a metric file."""
    mapped = MmapedDict(str(directory / file_name))
    try:
        for (metric, name, label_names, label_values), value in values.items():
            key = mmap_key(metric, name, list(label_names), list(label_values), "help")
            mapped.write_value(key, mapped.read_value(key)[0] + value, timestamp)
    finally:
        mapped.close()


def totals(directory: Path, collector=MultiProcessCollector) -> dict[tuple, float]:
    registry = CollectorRegistry()
    collector(registry, path=str(directory))
    text = generate_latest(registry).decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def worker_files(directory: Path, pid: int, requests: int, slow: int) -> None:
    write(directory, f"counter_{pid}.db", {(*REQUESTS, ("200",)): requests, (*REQUESTS, ("404",)): 1})
    write(directory, f"histogram_{pid}.db", {(*LATENCY, ("0.01",)): requests - slow, (*LATENCY, ("+Inf",)): slow,
                                            ("latency_seconds", "latency_seconds_sum", (), ()): 0.5})
    write(directory, f"gauge_livesum_{pid}.db", {("in_flight", "in_flight", (), ()): 2})
    write(directory, f"gauge_max_{pid}.db", {("peak", "peak", (), ()): requests})
    write(directory, f"gauge_mostrecent_{pid}.db", {("last", "last", (), ()): pid}, timestamp=pid)


def test_retiring_dead_workers_keeps_every_total_and_bounds_the_files(tmp_path):
    alive = 9999
    worker_files(tmp_path, alive, requests=5, slow=1)
    before = None
    for pid in range(100, 400):
        worker_files(tmp_path, pid, requests=pid % 7 + 1, slow=pid % 2)
        expected = totals(tmp_path)
        retire_process(pid, str(tmp_path))
        after = totals(tmp_path)
        # The live gauge of a dead process goes (as mark_process_dead does); all else stays.
        without_live = {key: value for key, value in expected.items() if key[0] != "in_flight"}
        assert {key: value for key, value in after.items() if key[0] != "in_flight"} == without_live
        assert after[("in_flight", ())] == 2  # the live worker's only
        before = after
    assert before[("http_requests_total", (("status", "200"),))] == 5 + sum(p % 7 + 1 for p in range(100, 400))
    assert before[("peak", ())] == max(5, *(p % 7 + 1 for p in range(100, 400)))
    assert before[("last", ())] == alive  # the most recent write (stamped with its pid)...
    [(_, archived, stamp, _)] = MmapedDict.read_all_values_from_file(str(tmp_path / "gauge_mostrecent_archive.db"))
    assert archived == stamp == 399  # ...and the most recent of the dead ones in the archive
    names = sorted(path.name for path in tmp_path.glob("*.db"))
    assert names == sorted([f"counter_{alive}.db", f"histogram_{alive}.db", f"gauge_livesum_{alive}.db",
                            f"gauge_max_{alive}.db", f"gauge_mostrecent_{alive}.db", "counter_archive.db",
                            "histogram_archive.db", "gauge_max_archive.db", "gauge_mostrecent_archive.db"])
    assert not list(tmp_path.glob("*.tmp"))


def test_only_the_named_process_is_retired(tmp_path):
    for pid in (12, 112, 1200):
        worker_files(tmp_path, pid, requests=3, slow=0)
    retire_process(12, str(tmp_path))
    assert not list(tmp_path.glob("*_12.db"))
    assert len(list(tmp_path.glob("*_112.db"))) == 5 and len(list(tmp_path.glob("*_1200.db"))) == 5


def test_gauges_kept_per_process_are_left_alone(tmp_path):
    write(tmp_path, "gauge_all_77.db", {("workers", "workers", (), ()): 1})
    retire_process(77, str(tmp_path))
    assert (tmp_path / "gauge_all_77.db").exists()


def test_without_a_directory_nothing_happens(monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    retire_process(os.getpid())  # no error, no file anywhere


def test_the_scrape_collector_reads_what_prometheus_client_reads(tmp_path):
    for pid in (1, 2, 3):
        worker_files(tmp_path, pid, requests=pid, slow=0)
    retire_process(2, str(tmp_path))
    assert totals(tmp_path, RetiringCollector) == totals(tmp_path, MultiProcessCollector)
    assert (tmp_path / ".retire.lock").exists()


@pytest.mark.parametrize("name", ["counter_archive.db", "gauge_max_archive.db"])
def test_archives_are_never_retired_as_a_process(tmp_path, name):
    write(tmp_path, name, {(*REQUESTS, ("200",)): 4})
    retire_process(0, str(tmp_path))
    assert (tmp_path / name).exists()


def test_a_file_that_cannot_be_folded_is_left_counted_with_a_warning(tmp_path, caplog):
    worker_files(tmp_path, 5, requests=3, slow=0)
    worker_files(tmp_path, 6, requests=4, slow=0)
    retire_process(5, str(tmp_path))
    # Process 6's counter file claims more bytes than it holds (a torn write).
    counter = tmp_path / "counter_6.db"
    counter.write_bytes(counter.read_bytes()[:24])
    with caplog.at_level("WARNING", logger="service.observability.multiproc"):
        retire_process(6, str(tmp_path))  # does not raise: it runs in the gunicorn master
    assert "metric files of process 6 not folded" in caplog.text
    assert counter.exists()
    assert (tmp_path / "counter_archive.db").exists()
    # The archive kept process 5 only.
    archived = {key: value for key, value, _, _ in MmapedDict.read_all_values_from_file(
        str(tmp_path / "counter_archive.db"))}
    assert sorted(archived.values()) == [1.0, 3.0]


def test_a_file_not_yet_sized_by_a_new_worker_is_skipped_by_scrapes_and_removed_when_retired(tmp_path):
    # prometheus_client creates a process's file, then sizes it: a scrape can meet it empty.
    worker_files(tmp_path, 7, requests=3, slow=0)
    (tmp_path / "counter_8.db").touch()
    with pytest.raises(struct.error):  # prometheus_client's own collector fails on it
        totals(tmp_path, MultiProcessCollector)
    expected = totals(tmp_path, RetiringCollector)
    assert expected[("http_requests_total", (("status", "200"),))] == 3
    # A worker killed in that moment leaves the file empty for good: retiring it removes it.
    retire_process(8, str(tmp_path))
    assert not (tmp_path / "counter_8.db").exists()
    assert totals(tmp_path, MultiProcessCollector) == expected
