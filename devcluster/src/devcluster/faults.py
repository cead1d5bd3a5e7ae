"""Fault injection for reliability tests, off unless configured.

A rule picks requests by verb and resource and, for a configured share of them, answers with
an error kube-apiserver can really return (500, 429 with Retry-After, 409 Conflict), delays
the answer, or cuts a watch stream short. Rules are data, loaded from a JSON or YAML file:

    seed: 7
    rules:
      - {verbs: [create], resources: [pods], share: 0.1, action: error, code: 429}
      - {verbs: [watch], share: 1.0, action: cut, seconds: 2, max_seconds: 20}

With `max_seconds`, a delay or cut lasts a random time between `seconds` and it. `rate: 0.2`
stands for the standard mix at that rate (`standard_rules`), and `dashboard: {rate: 0.2}`
makes the simulated runtime's Ray heads fail proxied calls (`ray_simulator.faults`). Every
fault injected is counted (`snapshot`), for the suites that report them. A cut is counted
when it is decided; the stream then ends at that time unless it ends sooner.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from devcluster import statuses
from devcluster.endpoints import Target, request_verb
from devcluster.ray_simulator.faults import DashboardFaults

_ACTIONS = ("error", "delay", "cut")
_CODES = (409, 429, 500)
RATE_ENV = "DEVCLUSTER_FAULT_RATE"
SEED_ENV = "DEVCLUSTER_FAULT_SEED"


@dataclass(frozen=True)
class FaultRule:
    """Which requests a fault hits, how often, and what it does."""

    action: str
    share: float = 1.0
    verbs: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()
    code: int = 500
    seconds: float = 1.0
    max_seconds: float | None = None

    @property
    def label(self) -> str:
        """What the fault is counted as: its status code, `latency` or `watch cut`."""
        return {"delay": "latency", "cut": "watch cut"}.get(self.action, str(self.code))

    def selects(self, verb: str, resource: str) -> bool:
        """Return whether a request's verb and resource fall under this rule."""
        return (not self.verbs or verb in self.verbs) and (
            not self.resources or resource in self.resources
        )


def _rule(data: dict[str, Any]) -> FaultRule:
    action = data.get("action", "error")
    if action not in _ACTIONS:
        raise ValueError(f"fault action must be one of {_ACTIONS}, not {action!r}")
    code = int(data.get("code", 500))
    if action == "error" and code not in _CODES:
        raise ValueError(f"fault code must be one of {_CODES}, not {code}")
    return FaultRule(
        action=action,
        share=float(data.get("share", 1.0)),
        verbs=frozenset(data.get("verbs") or ()),
        resources=frozenset(data.get("resources") or ()),
        code=code,
        seconds=float(data.get("seconds", 1.0)),
        max_seconds=None if data.get("max_seconds") is None else float(data["max_seconds"]),
    )


def standard_rules(rate: float) -> list[dict[str, Any]]:
    """The usual faults of a busy API server, together hitting about `rate` of requests.

    500s, 429s (Retry-After) and added latency (0.1-1 s) split `rate` on every request, 409s
    take a third of it on updates and patches (a concurrent writer won), and that share of
    watches is cut after 1-20 s.
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"fault rate must be within [0, 1], not {rate}")
    third = rate / 3
    return [
        {"action": "error", "code": 500, "share": third},
        {"action": "error", "code": 429, "share": third},
        {"action": "error", "code": 409, "share": third, "verbs": ["update", "patch"]},
        {"action": "delay", "share": third, "seconds": 0.1, "max_seconds": 1.0},
        {"action": "cut", "share": rate, "verbs": ["watch"], "seconds": 1.0, "max_seconds": 20.0},
    ]


@dataclass
class Faults:
    """The configured rules and the random source deciding which requests they hit."""

    rules: list[FaultRule] = field(default_factory=list)
    seed: int | None = None
    dashboard: DashboardFaults | None = None
    counts: Counter[str] = field(default_factory=Counter)
    requests: int = 0

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Faults:
        """Build from the parsed configuration."""
        seed = data.get("seed")
        rules = standard_rules(float(data["rate"])) if data.get("rate") else []
        rules += data.get("rules") or []
        dashboard = None
        if isinstance(data.get("dashboard"), dict):
            dashboard = DashboardFaults(**{"seed": seed, **data["dashboard"]})
        return cls([_rule(r) for r in rules], seed, dashboard)

    @classmethod
    def at_rate(cls, rate: float, seed: int | None = None) -> Faults:
        """The standard mix at `rate`, for the API server and the simulated dashboards alike."""
        if not rate:
            return cls(seed=seed)
        return cls.from_data({"rate": rate, "seed": seed, "dashboard": {"rate": rate}})

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Faults | None:
        """`at_rate` from DEVCLUSTER_FAULT_RATE (and _SEED); None when unset or 0."""
        env = os.environ if env is None else env
        rate = float(env.get(RATE_ENV) or 0)
        seed = env.get(SEED_ENV)
        return cls.at_rate(rate, int(seed) if seed else None) if rate else None

    def snapshot(self) -> dict[str, dict[str, int]]:
        """Faults injected so far by kind, and requests considered, per side."""
        out = {"apiserver": {"requests": self.requests, **dict(sorted(self.counts.items()))}}
        if self.dashboard is not None:
            out["dashboard"] = self.dashboard.snapshot()
        return out

    @classmethod
    def from_file(cls, path: Path) -> Faults:
        """Load a JSON or YAML configuration file."""
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        return cls.from_data(data or {})

    async def before(self, request: web.Request, target: Target) -> float | None:
        """Apply the faults that hit this request; return a watch cut-off, if any."""
        if not self.rules:
            return None
        self.requests += 1
        verb = request_verb(request.method, target, request.query)
        kind = target.kind
        names = {kind.plural, f"{kind.plural}.{kind.group}" if kind.group else kind.plural}
        cut_after: float | None = None
        for rule in self.rules:
            if not any(rule.selects(verb, n) for n in names):
                continue
            if self._random.random() >= rule.share:
                continue
            self.counts[rule.label] += 1
            seconds = rule.seconds
            if rule.max_seconds is not None:
                seconds = self._random.uniform(rule.seconds, rule.max_seconds)
            if rule.action == "delay":
                await asyncio.sleep(seconds)
            elif rule.action == "cut":
                cut_after = seconds
            else:
                raise _error(rule.code, target)
        return cut_after


def _error(code: int, target: Target) -> statuses.ApiError:
    kind = target.kind
    if code == 409:
        return statuses.conflict(kind.group, kind.plural, target.name or "")
    if code == 429:
        return statuses.ApiError(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
            {"retryAfterSeconds": 1},
            {"Retry-After": "1"},
        )
    return statuses.ApiError(500, "InternalError", "Internal error occurred: injected fault")
