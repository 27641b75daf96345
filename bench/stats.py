"""Timing loops and the statistics the report uses: percentiles and the growth exponent."""

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

MS = 1000.0


@dataclass(frozen=True)
class Budget:
    """How long to measure one thing: at least ``min_calls``, then until ``seconds`` pass."""

    seconds: float
    min_calls: int
    max_calls: int
    warmup: int = 2


@dataclass(frozen=True)
class Timing:
    calls: int
    p50_ms: float
    p99_ms: float
    mean_ms: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> "Timing":
        ordered = sorted(seconds)
        return cls(
            calls=len(ordered),
            p50_ms=round(percentile(ordered, 0.50) * MS, 4),
            p99_ms=round(percentile(ordered, 0.99) * MS, 4),
            mean_ms=round(sum(ordered) / len(ordered) * MS, 4),
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of sorted samples (with fewer than 100 calls p99 is the maximum)."""
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def measure(call: Callable[[], object], budget: Budget) -> Timing:
    """Call ``call`` repeatedly and time each call."""
    for _ in range(budget.warmup):
        call()
    samples: list[float] = []
    deadline = time.perf_counter() + budget.seconds
    while len(samples) < budget.max_calls and (
        len(samples) < budget.min_calls or time.perf_counter() < deadline
    ):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return Timing.of(samples)


def measure_together(calls: dict[str, Callable[[], object]], budget: Budget) -> dict[str, Timing]:
    """Time several calls in turn, round after round, so that load from elsewhere on the
    machine falls on all of them alike and their ratios hold."""
    for _ in range(budget.warmup):
        for call in calls.values():
            call()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    rounds = 0
    deadline = time.perf_counter() + budget.seconds * len(calls)
    while rounds < budget.max_calls and (
        rounds < budget.min_calls or time.perf_counter() < deadline
    ):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
        rounds += 1
    return {name: Timing.of(s) for name, s in samples.items()}


def growth_exponent(sizes: Sequence[float], costs: Sequence[float]) -> float | None:
    """The slope of log(cost) against log(size), by least squares: 1.0 is linear growth."""
    points = [(math.log(s), math.log(c)) for s, c in zip(sizes, costs, strict=True) if s > 0 < c]
    if len({x for x, _ in points}) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return round(sxy / sxx, 3)
