"""Traffic arithmetic of a route: weights within a priority tier, tiers renumbered.

Pure functions of plain numbers, so the rules the API promises are tested
as tables rather than through whole requests.
"""

import math
from collections.abc import Iterable, Sequence

WEIGHT_MAX = 1_000_000


def tier_weights(entries: Sequence[tuple[int, int]]) -> list[int]:
    """Per-endpoint weights of one tier, flattened in entry order.

    ``entries`` holds ``(weight, endpoints)`` for each entry of the tier: the
    entry's weight is shared equally by the endpoints it matched (entries
    that matched none are skipped). Shares are kept exact by scaling every
    entry to the least common multiple of the endpoint counts, so no
    endpoint rounds to 0; then reduced to lowest terms (``90/10`` → ``9, 1``)
    and, should the largest still exceed what a backendRef accepts, scaled
    down to fit with a floor of 1 (a weight of 0 would drop the backend).
    """
    entries = [(weight, count) for weight, count in entries if count > 0]
    if not entries:
        return []
    scale = math.lcm(*(count for _, count in entries))
    weights = [weight * scale // count for weight, count in entries for _ in range(count)]
    weights = _lowest_terms(weights)
    top = max(weights)
    if top > WEIGHT_MAX:
        # Round half up; the largest lands exactly on the maximum.
        weights = _lowest_terms([max(1, (w * WEIGHT_MAX + top // 2) // top) for w in weights])
    return weights


def _lowest_terms(weights: list[int]) -> list[int]:
    divisor = math.gcd(*weights)
    return [w // divisor for w in weights]


def renumber(priorities: Iterable[int]) -> dict[int, int]:
    """Map the priorities that still have endpoints onto 0..N-1, in order.

    Envoy walks priority levels from 0 upwards; a gap (a tier whose endpoints
    all dropped out) must not leave the next tier waiting behind an empty
    level.
    """
    return {priority: level for level, priority in enumerate(sorted(set(priorities)))}
