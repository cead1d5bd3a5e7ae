"""The top-level import names the project installs, and a check that each is its own.

The project keeps the folders it was laid out with (`workflows/`, `activities/`, `worker/`,
`bridge/`, beside `crds/`, `runtime/` and this package), and each folder is a top-level import
name once installed. Nesting them under one package would need a package-dir mapping that mypy
and import-linter cannot follow on the source tree, so the names stay, and this check makes a
clash loud instead: another distribution that installs a package of the same name into the same
environment, or a folder of that name earlier on `sys.path`, would otherwise make a command
import the wrong code and fail somewhere far from the cause. Every command runs it first.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import packages_distributions
from pathlib import Path
from typing import Final

DISTRIBUTION: Final = "kuberay-temporal"
PACKAGES: Final = (
    "activities",
    "bridge",
    "crds",
    "kuberay_temporal",
    "runtime",
    "worker",
    "workflows",
)
"""Every top-level package of the runtime distribution (pyproject's package list)."""

HOME: Final = Path(__file__).resolve().parent.parent
"""Where this installation's packages sit side by side: site-packages, or the source tree."""


def clashes(
    packages: Iterable[str] = PACKAGES,
    home: Path = HOME,
    owners: Callable[[], Mapping[str, list[str]]] = packages_distributions,
) -> list[str]:
    """Describe each of `packages` that another distribution or folder also provides.

    Args:
        packages: Top-level import names this distribution installs.
        home: The folder all of them must resolve in.
        owners: Import name → the distributions that install it (from their metadata).
    """
    claimed = owners()
    problems = []
    for name in packages:
        others = sorted(
            {owner for owner in claimed.get(name, []) if _normal(owner) != _normal(DISTRIBUTION)}
        )
        if others:
            problems.append(f"{name!r} is also installed by {', '.join(others)}")
            continue
        where = _location(name)
        if where is None:
            problems.append(f"{name!r} cannot be found")
        elif where.parent != home:
            problems.append(f"{name!r} is imported from {where}, not from {home / name}")
    return problems


def _location(name: str) -> Path | None:
    """The folder the package `name` imports from, without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None:
        return None
    if spec.origin is not None and spec.origin not in ("namespace", "built-in", "frozen"):
        origin = Path(spec.origin).resolve()
        # A package is its folder (`…/workflows/__init__.py`); a plain module is its file.
        return origin.parent if spec.submodule_search_locations is not None else origin
    locations = list(spec.submodule_search_locations or [])
    return Path(locations[0]).resolve() if locations else None


def _normal(distribution: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return distribution.lower().replace("_", "-").replace(".", "-")
