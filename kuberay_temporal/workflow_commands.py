"""`kuberay-temporal status`, `ls` and `signal`: the CR workflows from a terminal.

They find a CR's workflow by search attributes (RayKind, RayNamespace, RayName), so they work
with nothing but the Temporal address; `status` asks the workflow's `progress` query, `signal`
sends the same user signals the Temporal UI can send. Every failure is one line on stderr and
a non-zero exit: an unknown CR, a signal that does not apply to that kind, an unreachable
server.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pydantic import ValidationError
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from crds.constants import KINDS
from runtime.codec import ENCODING, PAYLOAD_KEY_VARIABLE, PayloadDecryptionError
from runtime.settings import Settings, describe_invalid
from runtime.temporal_client import connect, exit_without_finalizing
from workflows import messages
from workflows.messages import RAY_KIND, RAY_NAME, RAY_NAMESPACE, RAY_STATE

# Which user signals each kind's workflow accepts.
_SIGNALS = {
    "RayCluster": (messages.SUSPEND, messages.RESUME),
    "RayJob": (messages.SUSPEND, messages.RESUME),
    "RayService": (messages.SUSPEND, messages.RESUME, messages.ROLLBACK),
    "RayCronJob": (messages.SUSPEND, messages.RESUME),
}


class InspectError(Exception):
    """Something the user should read in one line."""


@dataclass(frozen=True)
class Target:
    """KIND/NAMESPACE/NAME as typed."""

    kind: str
    namespace: str
    name: str

    @classmethod
    def parse(cls, text: str) -> Target:
        """Parse `KIND/NAMESPACE/NAME`; the kind is case-insensitive."""
        parts = text.split("/")
        if len(parts) != 3 or not all(parts):
            raise InspectError(
                f"expected KIND/NAMESPACE/NAME (e.g. RayJob/default/train), got {text!r}"
            )
        kind = next((k for k in KINDS if k.lower() == parts[0].lower()), None)
        if kind is None:
            raise InspectError(f"unknown kind {parts[0]!r}: expected one of {', '.join(KINDS)}")
        return cls(kind, parts[1], parts[2])

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `status`, `ls` and `signal`."""
    status = subparsers.add_parser("status", help="progress and last decisions of one CR")
    status.add_argument("target", metavar="KIND/NAMESPACE/NAME")
    status.set_defaults(handler=_runner(show_status))
    listing = subparsers.add_parser("ls", help="list CR workflows")
    listing.add_argument("--kind", choices=KINDS)
    listing.add_argument("--namespace")
    listing.add_argument("--state", help="headline state, e.g. ready, Running, Complete")
    listing.add_argument("--all", action="store_true", help="include finished workflows")
    listing.set_defaults(handler=_runner(show_list))
    signal = subparsers.add_parser("signal", help="suspend, resume or roll back a CR")
    signal.add_argument("signal", choices=(messages.SUSPEND, messages.RESUME, messages.ROLLBACK))
    signal.add_argument("target", metavar="KIND/NAMESPACE/NAME")
    signal.add_argument("--reason", default="", help="recorded in the history and the Event")
    signal.set_defaults(handler=_runner(send_signal))


Command = Callable[[Client, argparse.Namespace], Awaitable[int]]


def _runner(command: Command) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            settings = Settings.from_env()
        except ValidationError as err:
            print(f"kuberay-temporal: invalid settings: {describe_invalid(err)}", file=sys.stderr)
            return 2
        try:
            code = int(asyncio.run(_with_client(settings, command, args)))
        except InspectError as err:
            print(f"kuberay-temporal {args.command}: {err}", file=sys.stderr)
            code = 1
        exit_without_finalizing(code)

    return run


async def _with_client(settings: Settings, command: Command, args: argparse.Namespace) -> int:
    try:
        client = await connect(settings)
    except RuntimeError as err:
        raise InspectError(f"cannot reach Temporal at {settings.temporal_address}: {err}") from None
    try:
        return int(await command(client, args))
    except RPCError as err:
        raise InspectError(f"Temporal at {settings.temporal_address}: {err.message}") from None
    except PayloadDecryptionError as err:
        raise InspectError(str(err)) from None
    except KeyError as err:
        # The SDK's converter meeting a payload only our codec can open.
        if ENCODING.decode() not in str(err):
            raise
        raise InspectError(
            f"the workflow's payloads are encrypted: set {PAYLOAD_KEY_VARIABLE} to the worker's key"
        ) from None


async def find_workflow(client: Client, target: Target) -> str:
    """The id of the running workflow of a CR (the newest uid, if re-created)."""
    query = (
        f"RayKind='{target.kind}' AND RayNamespace='{target.namespace}' "
        f"AND RayName='{target.name}' AND ExecutionStatus='Running'"
    )
    found = [wf async for wf in client.list_workflows(query)]
    if not found:
        raise InspectError(
            f"no running workflow for {target} (is the CR applied and the bridge up?)"
        )
    return max(found, key=lambda wf: wf.start_time).id


async def show_status(client: Client, args: argparse.Namespace) -> int:
    """Print the `progress` query of one CR's workflow."""
    target = Target.parse(args.target)
    workflow_id = await find_workflow(client, target)
    handle = client.get_workflow_handle(workflow_id)
    progress = await handle.query(messages.PROGRESS, result_type=messages.Progress)
    print(f"{target}: {progress.state} (generation {progress.observed_generation})")
    print(f"workflow  {workflow_id}")
    for line in progress.waiting_for:
        print(f"waiting   {line}")
    for line in progress.last_decisions:
        print(f"decided   {line}")
    return 0


async def show_list(client: Client, args: argparse.Namespace) -> int:
    """Print one line per CR workflow matching the filters."""
    clauses = [f"RayKind='{args.kind}'" if args.kind else "RayKind IS NOT NULL"]
    if args.namespace:
        clauses.append(f"RayNamespace='{args.namespace}'")
    if args.state:
        clauses.append(f"RayState='{args.state}'")
    if not args.all:
        clauses.append("ExecutionStatus='Running'")
    rows = []
    async for wf in client.list_workflows(" AND ".join(clauses)):
        attrs = wf.typed_search_attributes
        rows.append(
            (
                attrs.get(RAY_KIND) or "",
                attrs.get(RAY_NAMESPACE) or "",
                attrs.get(RAY_NAME) or "",
                attrs.get(RAY_STATE) or "-",
                (wf.status or WorkflowExecutionStatus.RUNNING).name.lower(),
            )
        )
    print(f"{'KIND':<11} {'NAMESPACE':<16} {'NAME':<32} {'STATE':<14} WORKFLOW")
    for row in sorted(rows):
        print(f"{row[0]:<11} {row[1]:<16} {row[2]:<32} {row[3]:<14} {row[4]}")
    return 0


async def send_signal(client: Client, args: argparse.Namespace) -> int:
    """Send a user signal, after checking that the kind accepts it."""
    target = Target.parse(args.target)
    if args.signal not in _SIGNALS[target.kind]:
        accepted = ", ".join(_SIGNALS[target.kind])
        raise InspectError(f"{target.kind} does not take {args.signal!r} (it takes {accepted})")
    workflow_id = await find_workflow(client, target)
    request = messages.UserRequest(reason=args.reason, requested_by="kuberay-temporal CLI")
    await client.get_workflow_handle(workflow_id).signal(args.signal, request)
    print(f"sent {args.signal} to {target} ({workflow_id})")
    return 0
