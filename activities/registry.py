"""Every activity the worker registers, bound to the clients it needs.

Activities that talk to an external system are methods of a class built with its client
(STYLE convention 4); this function builds those objects and returns their bound
methods, so the worker only has to pass the clients in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def build_activities() -> list[Callable[..., Any]]:
    """Return the activity callables to register on the worker.

    Later issues add the Kubernetes and Ray dashboard clients as parameters.

    Returns:
        Functions decorated with `@activity.defn`; none yet.
    """
    return []
