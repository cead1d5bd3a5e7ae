"""The chaos suite's kill schedule: seeded, bounded in count and in time, one kill at a time."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

COMPONENTS = ("worker", "bridge", "devcluster", "temporal")
"""Every process the suite kills with SIGKILL."""


@dataclass(frozen=True)
class Kill:
    """One `kill -9`: when (seconds after the start), of what, and how long it stays down."""

    at: float
    component: str
    down_for: float


def plan_kills(
    seed: int,
    count: int,
    window: float,
    components: Sequence[str] = COMPONENTS,
    max_down: float = 3.0,
) -> list[Kill]:
    """Return `count` kills inside `[0, window)`, each component about equally often.

    The same seed gives the same schedule, so a failing run can be repeated. Components are
    dealt round-robin from a shuffled order (every one is killed once `count` reaches their
    number); the moments are uniform over the window and each restart follows after a
    uniform 0.2 to `max_down` seconds.
    """
    rng = random.Random(seed)
    order = list(components)
    rng.shuffle(order)
    moments = sorted(rng.uniform(0, window) for _ in range(count))
    return [
        Kill(at, order[i % len(order)], rng.uniform(0.2, max_down)) for i, at in enumerate(moments)
    ]
