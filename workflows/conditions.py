"""metav1.Condition bookkeeping with apimachinery's semantics, for every kind's status.

`set_condition` behaves like `meta.SetStatusCondition`: the transition time moves only when
the condition's status changes, so a condition that stays True keeps the time it became True.
"""

from __future__ import annotations

from datetime import datetime

from crds.common import Condition
from crds.enums import ConditionStatus


def find_condition(conditions: list[Condition] | None, kind: str) -> Condition | None:
    """The condition of that type, if present."""
    return next((c for c in conditions or [] if c.type == kind), None)


def is_true(conditions: list[Condition] | None, kind: str) -> bool:
    """Whether the condition of that type is present and True."""
    found = find_condition(conditions, kind)
    return found is not None and found.status == ConditionStatus.TRUE


def set_condition(
    conditions: list[Condition] | None,
    kind: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    now: datetime,
    observed_generation: int | None = None,
) -> list[Condition]:
    """Return the conditions with one set (added, or updated in place)."""
    out = list(conditions or [])
    old = find_condition(out, kind)
    changed_at = old.last_transition_time if old and old.status == status else now
    new = Condition(
        type=kind, status=status, reason=reason, message=message, last_transition_time=changed_at
    )
    if observed_generation is not None:
        new.observed_generation = observed_generation
    if old is None:
        out.append(new)
    else:
        out[out.index(old)] = new
    return out


def remove_condition(conditions: list[Condition] | None, kind: str) -> list[Condition]:
    """Return the conditions without the one of that type."""
    return [c for c in conditions or [] if c.type != kind]
