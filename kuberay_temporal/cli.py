"""The `kuberay-temporal` command: one subcommand per component.

Each component module exposes `register(subparsers)`, which adds its subcommand and sets
`handler` on the parsed namespace; the handler returns the process exit code. Keeping the
registration next to the component keeps this module a plain dispatcher.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import import_module

# Modules that contribute subcommands, in the order `--help` lists them.
_COMPONENTS = (
    "kuberay_temporal.dev",
    "kuberay_temporal.validate",
    "kuberay_temporal.manifests",
    "devcluster.command",
    "worker.command",
    "bridge.command",
    "worker.codec_server",
    "kuberay_temporal.workflow_commands",
)

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every component's subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="kuberay-temporal",
        description="KubeRay's RayCluster, RayJob and RayService driven by Temporal workflows.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMPONENTS:
        try:
            module = import_module(name)
        except ModuleNotFoundError as err:
            if err.name != name:
                raise
            continue  # component not built yet
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run the chosen subcommand."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
