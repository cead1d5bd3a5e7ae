"""`kuberay-temporal validate FILE...`: check ray.io manifests before applying them.

A RayJob that KubeRay would reject fails late and far from its author: as a `ValidationFailed`
status after `kubectl apply`, or not at all until a pod misbehaves. This command runs the same
checks the controller runs (the models' schema, then the semantic rules in
`crds.validation`) on files, so a manifest can be fixed in an editor or checked in CI.

Output, one line per object, on stdout::

    OK RayCluster/raycluster-complete
    INVALID RayJob/train: spec.backoffLimit: must be an integer, got str 'x'
    SKIPPED ConfigMap/redis-config (not a ray.io object)

Input that cannot be checked at all (unreadable or malformed YAML, a document beyond
`crds.payloads.MANIFEST_BOUNDS`, an empty file, an object that is not a ray.io/v1
RayCluster, RayJob, RayService or RayCronJob with a name) is reported as one `error:` line on
stderr, with the file and line, never as a traceback.

Exit codes: 0 every ray.io object is valid, 1 some object is invalid, 2 some input could not
be checked.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

import yaml

from crds.common import JSONObject
from crds.constants import API_VERSION
from crds.feature_gates import FeatureGates, parse_feature_gates
from crds.loading import KIND_MODELS, is_ray_object, parse_ray_object
from crds.payloads import MANIFEST_BOUNDS, PayloadLimitError, load_yaml_documents
from crds.validation import validate
from crds.validation.gates import gate_violations
from crds.violations import InvalidObjectError, Violation

STDIN = "-"
GATES_VARIABLE = "KUBERAY_TEMPORAL_FEATURE_GATES"
"""The operator's setting, read here too: a manifest is checked against the gates it will meet."""
DEFAULT_GATES = FeatureGates()


class ExitCode(IntEnum):
    """The command's exit codes, ordered by severity: a run reports its worst."""

    OK = 0
    INVALID = 1
    UNUSABLE = 2


class InputError(Exception):
    """Input that cannot be checked; the message is one line, with the place when known."""


@dataclass(frozen=True)
class Document:
    """One YAML document and where it starts."""

    source: str
    line: int
    body: Any

    @property
    def where(self) -> str:
        """`file:line`, for error messages."""
        return f"{self.source}:{self.line}"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `validate` subcommand."""
    parser = subparsers.add_parser(
        "validate",
        help="check RayCluster, RayJob, RayService and RayCronJob manifests",
        description="Check every ray.io/v1 object in multi-document YAML files the way the "
        "controller will: schema first, then KubeRay's semantic rules. Other kinds are "
        "listed as SKIPPED.",
        epilog="exit codes: 0 all ray.io objects are valid, 1 some object is invalid, "
        "2 some input could not be read or an object could not be identified",
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help=f"a YAML file, or {STDIN} for stdin"
    )
    parser.add_argument(
        "--feature-gates",
        metavar="GATES",
        default=os.environ.get(GATES_VARIABLE, ""),
        help="KubeRay's feature gates the operator runs with, e.g. RayClusterNetworkPolicy=true "
        f"(default: ${GATES_VARIABLE}, else v1.7.0's): a spec needing a gate that is off is "
        "INVALID",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Check every file named in `args.files`; return the worst exit code found."""
    try:
        gates = parse_feature_gates(args.feature_gates)
    except ValueError as err:
        _error(f"--feature-gates: {err}")
        return int(ExitCode.UNUSABLE)
    worst = ExitCode.OK
    for name in args.files:
        worst = max(worst, check_file(name, gates))
    return int(worst)


def check_file(name: str, gates: FeatureGates = DEFAULT_GATES) -> ExitCode:
    """Check one file (or stdin), printing one line per object; return its exit code."""
    try:
        documents = read_documents(name)
    except InputError as err:
        _error(str(err))
        return ExitCode.UNUSABLE
    worst = ExitCode.OK
    for document in documents:
        try:
            worst = max(worst, check_document(document, gates))
        except InputError as err:
            _error(f"{document.where}: {err}")
            worst = ExitCode.UNUSABLE
    return worst


def read_documents(name: str) -> list[Document]:
    """Parse every non-empty YAML document of a file, or of stdin for `-`.

    The whole file is parsed before any object is checked, so that a syntax error late in a
    file gives one error line instead of a partial report.

    Raises:
        InputError: The file cannot be read, is not YAML, or holds no document.
    """
    source = "<stdin>" if name == STDIN else name
    try:
        text = sys.stdin.read() if name == STDIN else Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise InputError(f"{source}: cannot read: {reason}") from None
    documents: list[Document] = []
    try:
        # YAML as the API server reads it (timestamps stay strings: metav1.Time parses them),
        # bounded like the YAML inside CR fields, per document: an alias bomb or a few
        # thousand `[` is one `error:` line, not an exhausted memory or a RecursionError.
        for line, body in load_yaml_documents(text, MANIFEST_BOUNDS):
            if body is not None:  # `---` separators around nothing, comment-only parts
                documents.append(Document(source, line, body))
    except yaml.YAMLError as err:
        raise InputError(_yaml_error(source, err)) from None
    except PayloadLimitError as err:
        where = source if err.line is None else f"{source}:{err.line}"
        raise InputError(f"{where}: refused: the document {err.problem}") from None
    if not documents:
        raise InputError(f"{source}: no YAML documents (the file is empty)")
    return documents


def check_document(document: Document, gates: FeatureGates = DEFAULT_GATES) -> ExitCode:
    """Check one document, printing its OK / INVALID / SKIPPED lines.

    Raises:
        InputError: The document is not a ray.io/v1 object this command can identify.
    """
    body = document.body
    kind, name = _identify(body)
    if not is_ray_object(body):
        print(f"SKIPPED {kind}/{name} (not a ray.io object)")
        return ExitCode.OK
    _require_ray_identity(body, kind, name)
    violations = _violations(body, gates)
    for violation in violations:
        print(f"INVALID {kind}/{name}: {violation}")
    if violations:
        return ExitCode.INVALID
    print(f"OK {kind}/{name}")
    return ExitCode.OK


def _identify(body: Any) -> tuple[str, str]:
    """Return a document's kind and name for display; reject what is no Kubernetes object."""
    if not isinstance(body, dict):
        raise InputError(f"expected a Kubernetes object (a mapping), got {_describe(body)}")
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if not (isinstance(api_version, str) and api_version):
        raise InputError("not a Kubernetes object: apiVersion is missing")
    if not (isinstance(kind, str) and kind):
        raise InputError("not a Kubernetes object: kind is missing")
    metadata = body.get("metadata")
    name: object = None
    if isinstance(metadata, dict):
        # generateName objects (for `kubectl create`) are shown by their prefix.
        name = metadata.get("name") or metadata.get("generateName")
    return kind, name if isinstance(name, str) and name else ""


def _require_ray_identity(body: JSONObject, kind: str, name: str) -> None:
    """Reject a ray.io document this controller cannot take as one of its kinds."""
    if kind not in KIND_MODELS:
        expected = ", ".join(KIND_MODELS)
        raise InputError(f"unknown ray.io kind {kind!r}: expected one of {expected}")
    if body["apiVersion"] != API_VERSION:
        raise InputError(
            f"{kind}/{name or '<unnamed>'}: apiVersion {body['apiVersion']!r} is not served, "
            f"use {API_VERSION}"
        )
    if not name:
        raise InputError(f"{kind}: metadata.name is required")


def _violations(body: JSONObject, gates: FeatureGates) -> list[Violation]:
    """Schema violations if the object does not load, else the rules it breaks.

    The rules include a field whose feature gate is off, as the operator refuses it.
    """
    try:
        obj = parse_ray_object(body)
    except InvalidObjectError as err:
        return err.violations
    return gate_violations(obj, gates) + validate(obj)


def _yaml_error(source: str, err: yaml.YAMLError) -> str:
    """One line for a YAML syntax error: file, line and column, then what went wrong."""
    if not isinstance(err, yaml.MarkedYAMLError):
        return f"{source}: invalid YAML: {' '.join(str(err).split())}"
    mark = err.problem_mark or err.context_mark
    where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
    parts = [part for part in (err.context, err.problem) if part]
    return f"{where}: invalid YAML: {', '.join(parts) or 'syntax error'}"


def _describe(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"[:80]


def _error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
