"""Fault injection for reliability tests, off unless configured.

A rule picks requests by verb and resource and, for a configured share of them, answers with
an error kube-apiserver can really return (500, 429 with Retry-After, 409 Conflict), delays
the answer, or cuts a watch stream short. Rules are data, loaded from a JSON or YAML file:

    seed: 7
    rules:
      - {verbs: [create], resources: [pods], share: 0.1, action: error, code: 429}
      - {verbs: [watch], share: 1.0, action: cut, seconds: 2}
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from devcluster import statuses
from devcluster.endpoints import Target, request_verb

_ACTIONS = ("error", "delay", "cut")
_CODES = (409, 429, 500)


@dataclass(frozen=True)
class FaultRule:
    """Which requests a fault hits, how often, and what it does."""

    action: str
    share: float = 1.0
    verbs: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()
    code: int = 500
    seconds: float = 1.0

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
    )


@dataclass
class Faults:
    """The configured rules and the random source deciding which requests they hit."""

    rules: list[FaultRule] = field(default_factory=list)
    seed: int | None = None

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Faults:
        """Build from the parsed configuration."""
        return cls([_rule(r) for r in data.get("rules") or []], data.get("seed"))

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
        verb = request_verb(request.method, target, request.query)
        kind = target.kind
        names = {kind.plural, f"{kind.plural}.{kind.group}" if kind.group else kind.plural}
        cut_after: float | None = None
        for rule in self.rules:
            if not any(rule.selects(verb, n) for n in names):
                continue
            if self._random.random() >= rule.share:
                continue
            if rule.action == "delay":
                await asyncio.sleep(rule.seconds)
            elif rule.action == "cut":
                cut_after = rule.seconds
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
