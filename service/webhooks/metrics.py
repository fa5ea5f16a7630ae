"""The worker's Prometheus metrics, in a registry of its own (served by its /metrics).

Label values come from small fixed sets only (outcomes, event types, reasons, timer
kinds), never from
URLs or ids, so the number of series stays bounded.
"""
from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

# From the save that produced the event to the receiver's 2xx: milliseconds when all is
# well, minutes when retries were needed (the backoff is capped at 5 minutes per step).
LATENCY_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
)


@dataclass(frozen=True)
class WorkerMetrics:
    """Counters and histograms of one worker process."""

    registry: CollectorRegistry
    attempts: Counter
    deliveries: Counter
    retries_scheduled: Counter
    postponed: Counter
    dead_letters: Counter
    latency: Histogram
    timers_fired: Counter
    timer_failures: Counter

    @classmethod
    def create(cls) -> WorkerMetrics:
        registry = CollectorRegistry()
        return cls(
            registry=registry,
            attempts=Counter(
                "webhook_attempts_total", "Delivery attempts made, by event type.",
                ["type"], registry=registry),
            deliveries=Counter(
                "webhook_deliveries_total",
                "Delivery attempts by outcome: delivered (2xx), failed (worth retrying), "
                "refused (forbidden address or unusable URL).",
                ["outcome"], registry=registry),
            retries_scheduled=Counter(
                "webhook_retries_scheduled_total", "Failed attempts scheduled to be tried again.",
                registry=registry),
            postponed=Counter(
                "webhook_deliveries_postponed_total",
                "Deliveries put off (no attempt made) because their receiver had its share of the "
                "worker's deliveries running.",
                registry=registry),
            dead_letters=Counter(
                "webhook_dead_letters_total",
                "Deliveries given up and written to the dead-letter stream, by reason.",
                ["reason"], registry=registry),
            latency=Histogram(
                "webhook_delivery_latency_seconds",
                "From the event's save to its successful delivery, in seconds.",
                buckets=LATENCY_BUCKETS, registry=registry),
            timers_fired=Counter(
                "timers_fired_total", "Due timers handled (a game's turn deadline, a ticket's, an invite's), by kind.",
                ["kind"], registry=registry),
            timer_failures=Counter(
                "timer_failures_total", "Due timers whose handler failed (they fire again after the lease), by kind.",
                ["kind"], registry=registry),
        )

    def count_timer(self, kind: str, handled: bool) -> None:
        """The background runner's report of a timer it fired."""
        (self.timers_fired if handled else self.timer_failures).labels(kind=kind).inc()

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format."""
        return generate_latest(self.registry)
