"""Wait for a condition with a deadline: the one way tests synchronise with background work."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T | None]] | Callable[[], T | None],
    *,
    within: float = 10.0,
    message: str = "condition",
) -> T:
    """Call `probe` until it returns something truthy, and return that; fail at the deadline."""
    deadline = time.monotonic() + within
    last: object = None
    while True:
        result = probe()
        if asyncio.iscoroutine(result) or isinstance(result, Awaitable):
            result = await result
        if result:
            return result  # type: ignore[return-value]
        last = result
        if time.monotonic() > deadline:
            raise AssertionError(f"no {message} within {within}s (last: {last!r})")
        await asyncio.sleep(0.02)


async def when(value: Awaitable[T], ok: Callable[[T], bool]) -> T | None:
    """`value`, awaited, if `ok` holds for it, else None: a probe for `eventually`."""
    found = await value
    return found if ok(found) else None
