"""The flags the worker and the bridge share: where their health and metrics ports listen.

Each overrides a setting (`runtime.settings`); the help names its variable, which the README's
settings table reads (`tests/deploy/tables.py`).
"""

from __future__ import annotations

import argparse
from typing import Any

LISTENER_FLAGS = ("health_port", "health_address", "metrics_port", "metrics_address")
"""The settings `add_listener_flags` adds a flag for."""


def add_listener_flags(parser: argparse.ArgumentParser) -> None:
    """Add `--health-port`, `--health-address`, `--metrics-port` and `--metrics-address`.

    Args:
        parser: The subcommand's parser.
    """
    parser.add_argument(
        "--health-port",
        type=int,
        help="serve /healthz and /readyz on this port (env KUBERAY_TEMPORAL_HEALTH_PORT)",
    )
    parser.add_argument(
        "--health-address",
        help="IP address of the health port (env KUBERAY_TEMPORAL_HEALTH_ADDRESS)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        help="serve Prometheus /metrics on this port (env KUBERAY_TEMPORAL_METRICS_PORT)",
    )
    parser.add_argument(
        "--metrics-address",
        help="IP address of the metrics port (env KUBERAY_TEMPORAL_METRICS_ADDRESS)",
    )


def listener_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The listener settings given on the command line, by setting name."""
    given = {name: getattr(args, name, None) for name in LISTENER_FLAGS}
    return {name: value for name, value in given.items() if value is not None}
