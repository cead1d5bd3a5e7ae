"""The traffic arithmetic of an incremental upgrade, one move at a time (S14, S15).

KubeRay re-derives every step from the status on each 2-second pass. Here a pure function
gets the current capacities and weights and returns the single next move; the upgrade child
carries it out, records the new numbers and asks again. Moves are KubeRay's (a)(b)(c):
(a) raise the pending cluster's `target_capacity` by maxSurge once its traffic caught up,
(b) every intervalSeconds move stepSize% of the route weight to it, capped at its capacity,
(c) lower the active capacity by maxSurge while the total exceeds 100. A rollback runs the
same loop the other way round. `traffic_gate` holds a forward traffic step back until the
Gateway controller reports the Gateway accepted and programmed and the route accepted.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from activities.kube.vocabulary import GATEWAY_READY, ROUTE_PARENT_READY
from activities.rayservice.contract import GatewayRouteStatus
from crds.enums import ConditionStatus
from crds.rayservice import RayServiceSpec
from workflows import durations

_DEFAULT_MAX_SURGE = 100


class Options(BaseModel):
    """`clusterUpgradeOptions`, defaulted."""

    model_config = ConfigDict(frozen=True)

    max_surge: int = _DEFAULT_MAX_SURGE
    step: int = 100
    interval: timedelta = timedelta(seconds=30)


class Traffic(BaseModel):
    """Target capacities and route weights of both clusters (percent)."""

    model_config = ConfigDict(frozen=True)

    active_capacity: int = 100
    pending_capacity: int = 0
    active_weight: int = 100
    pending_weight: int = 0
    migrated_at: datetime | None = None
    """When the weights last moved (KubeRay's lastTrafficMigratedTime)."""


class MoveKind(StrEnum):
    """One step of the loop."""

    PENDING_CAPACITY = "PendingCapacity"
    ACTIVE_CAPACITY = "ActiveCapacity"
    WEIGHTS = "Weights"
    WAIT = "Wait"
    DONE = "Done"
    ROLLED_BACK = "RolledBack"


class Move(BaseModel):
    """The next move and the numbers after it."""

    model_config = ConfigDict(frozen=True)

    kind: MoveKind
    traffic: Traffic
    until: datetime | None = None
    """For WAIT: when the next weight step is allowed; None if never (past the year 9999)."""
    needs_healthy_pending: bool = False
    """For WEIGHTS: traffic moves to the pending cluster only while its apps all run."""


def options_of(spec: RayServiceSpec) -> Options:
    """The incremental options of a validated spec."""
    strategy = spec.upgrade_strategy
    given = strategy.cluster_upgrade_options if strategy else None
    if given is None:
        return Options()
    surge = _DEFAULT_MAX_SURGE if given.max_surge_percent is None else given.max_surge_percent
    # A zero surge or step would never finish; validation allows 0, so move by 1 at least.
    surge = max(1, surge)
    return Options(
        max_surge=surge,
        step=max(1, given.step_size_percent or surge),
        interval=durations.seconds(given.interval_seconds or 30),
    )


def next_move(traffic: Traffic, options: Options, now: datetime) -> Move:
    """The next move of an upgrade towards the pending cluster."""
    t = traffic
    if t.active_capacity == 0 and t.pending_weight == 100:
        return Move(kind=MoveKind.DONE, traffic=t)
    if t.pending_weight == t.pending_capacity:
        # Capacity changes wait until the traffic caught up with the last one.
        if t.active_capacity + t.pending_capacity > 100:
            lower = max(0, t.active_capacity - options.max_surge)
            return _capacity(
                MoveKind.ACTIVE_CAPACITY, t.model_copy(update={"active_capacity": lower})
            )
        if t.pending_capacity < 100:
            raise_to = min(100, t.pending_capacity + options.max_surge)
            return _capacity(
                MoveKind.PENDING_CAPACITY, t.model_copy(update={"pending_capacity": raise_to})
            )
    if (wait := _wait(t, options, now)) is not None:
        return wait
    pending = min(100, t.pending_weight + options.step, t.pending_capacity)
    moved = t.model_copy(
        update={"pending_weight": pending, "active_weight": 100 - pending, "migrated_at": now}
    )
    return Move(kind=MoveKind.WEIGHTS, traffic=moved, needs_healthy_pending=True)


def next_rollback_move(
    traffic: Traffic, options: Options, now: datetime, pending_healthy: bool
) -> Move:
    """The next move of a rollback towards the active cluster (S15)."""
    t = traffic
    back = t.active_capacity == 100 and t.active_weight == 100
    if back and (not pending_healthy or (t.pending_capacity == 0 and t.pending_weight == 0)):
        return Move(kind=MoveKind.ROLLED_BACK, traffic=t)
    if t.active_weight == t.active_capacity:
        if t.active_capacity + t.pending_capacity > 100:
            lower = max(0, t.pending_capacity - options.max_surge)
            return _capacity(
                MoveKind.PENDING_CAPACITY, t.model_copy(update={"pending_capacity": lower})
            )
        if t.active_capacity < 100:
            raise_to = min(100, t.active_capacity + options.max_surge)
            return _capacity(
                MoveKind.ACTIVE_CAPACITY, t.model_copy(update={"active_capacity": raise_to})
            )
    if (wait := _wait(t, options, now)) is not None:
        return wait
    active = min(100, t.active_weight + options.step, t.active_capacity)
    moved = t.model_copy(
        update={"active_weight": active, "pending_weight": 100 - active, "migrated_at": now}
    )
    return Move(kind=MoveKind.WEIGHTS, traffic=moved)


_TRUE = ConditionStatus.TRUE


def traffic_gate(reported: GatewayRouteStatus) -> str | None:
    """Why the next traffic step must wait for the Gateway controller, or None to go on (S14).

    KubeRay's IsGatewayReady and IsHTTPRouteReady: the Gateway Accepted and Programmed, the
    route's parent entry for it Accepted and ResolvedRefs, each reported True; a condition not
    reported (no Gateway controller, or none has seen the object yet) waits, as in KubeRay.
    Beyond KubeRay, a True written for an older generation of the object waits too, so the
    last weights were taken up before the next step.
    """
    waits: list[str] = []
    checks = (
        ("Gateway", reported.gateway, GATEWAY_READY),
        ("HTTPRoute", reported.route, ROUTE_PARENT_READY),
    )
    for kind, conditions, wanted in checks:
        by_type = {cond.type: cond for cond in conditions}
        for name in wanted:
            cond = by_type.get(name)
            if cond is None:
                waits.append(f"{kind} {name} is not reported")
                continue
            if cond.status == _TRUE and cond.current:
                continue
            state = cond.status if cond.current else f"{cond.status} for an older generation"
            waits.append(
                f"{kind} {cond.type} is {state}" + (f" ({cond.reason})" if cond.reason else "")
            )
    return "; ".join(waits) or None


def _capacity(kind: MoveKind, traffic: Traffic) -> Move:
    return Move(kind=kind, traffic=traffic)


def _wait(traffic: Traffic, options: Options, now: datetime) -> Move | None:
    """A wait until the interval since the last weight step has passed, if it has not."""
    if traffic.migrated_at is None:
        return None
    due = durations.after(traffic.migrated_at, options.interval)
    if due is not None and due <= now:
        return None
    return Move(kind=MoveKind.WAIT, traffic=traffic, until=due)
