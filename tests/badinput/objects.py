"""The objects the bad-input properties start from, and the two gates an object passes.

* KubeRay's own samples (every ray.io object under `tests.reference.KUBERAY_SAMPLES`) are the
  valid starting points that mutations break.
* `admit` is the API server's gate: metadata rules and the CRD's structural schema from
  `deploy/crds/` (or KubeRay's own CRDs, which a cluster may have installed instead), applied
  by devcluster's own functions (the code its API server runs on every create), so pruning and
  defaulting happen exactly as they do for a stored object. CEL rules are not evaluated there;
  our validation implements them.
* `our_verdict` is our gate: what the read activities and the workflows run on a stored object
  (`parse_ray_object`, then `validate`).
"""

from __future__ import annotations

import copy
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from crds.loading import is_ray_object, parse_ray_object
from crds.validation import validate
from crds.violations import InvalidObjectError, Violation
from devcluster.crds import kind_rows
from devcluster.decoding import check_type_meta
from devcluster.kinds import Kind
from devcluster.schemas import apply_schema
from devcluster.statuses import ApiError
from devcluster.validation import validate_metadata
from tests.reference import KUBERAY_CRDS, REPO_ROOT, sample_files

JSON = dict[str, Any]
KINDS = ("RayCluster", "RayJob", "RayService", "RayCronJob")
"""The kinds the properties generate."""
CLUSTER_SPEC = {
    "RayCluster": ("spec",),
    "RayJob": ("spec", "rayClusterSpec"),
    "RayService": ("spec", "rayClusterConfig"),
    "RayCronJob": ("spec", "jobTemplate", "rayClusterSpec"),
}
"""Where each kind keeps its RayClusterSpec."""
JOB_SPEC = {"RayJob": ("spec",), "RayCronJob": ("spec", "jobTemplate")}
"""Where a kind keeps a RayJob spec (a RayCronJob's is the template of its RayJobs)."""
CRD_DIR = REPO_ROOT / "deploy" / "crds"


@functools.cache
def kuberay_samples() -> dict[str, tuple[JSON, ...]]:
    """Every document of `KINDS` among KubeRay's samples, by kind."""
    found: dict[str, list[JSON]] = {kind: [] for kind in KINDS}
    for path in sample_files():
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and is_ray_object(doc) and doc.get("kind") in KINDS:
                found[doc["kind"]].append(doc)
    return {kind: tuple(docs) for kind, docs in found.items()}


CRD_DIRS = {"ours": CRD_DIR, "kuberay": KUBERAY_CRDS}
"""The CRDs a cluster may have installed: ours, or KubeRay's own (same kinds, own schema)."""


@functools.cache
def _crd_kind(kind: str, crds: str) -> Kind:
    path = CRD_DIRS[crds] / f"ray.io_{kind.lower()}s.yaml"
    crd = yaml.safe_load(Path(path).read_text())
    return next(row for row in kind_rows(crd) if row.version == "v1")


_DECODE_FIELD = re.compile(r"Go struct field ObjectMeta\.(metadata\.\w+)")


@dataclass
class Admission:
    """What the API server made of a create: the stored object, or why it refused it."""

    stored: JSON
    causes: list[str]
    """Field paths of the 422 causes, plus unknown fields (kubectl's default is Strict)."""
    undecodable: bool = False
    """A 400: metadata that is not even ObjectMeta, which no CRD can let into the store."""

    @property
    def rejected(self) -> bool:
        """Whether the create failed."""
        return bool(self.causes)


def admit(doc: JSON, crds: str = "ours") -> Admission:
    """Run a `kubectl create` of `doc` through the API server's checks, as devcluster does.

    `crds` picks the installed CRDs: "ours" (deploy/crds) or "kuberay" (KubeRay's).
    """
    obj = copy.deepcopy(doc)
    meta = obj.setdefault("metadata", {})
    if isinstance(meta, dict):
        meta.setdefault("namespace", "default")  # kubectl fills in its context's namespace
        if not meta.get("name") and isinstance(meta.get("generateName"), str):
            meta["name"] = meta["generateName"] + "x7k2q"  # the server's random suffix
    kind = _crd_kind(str(obj.get("kind")), crds)
    try:
        check_type_meta(kind, obj)
    except ApiError as err:  # a 400: the body does not even decode
        found = _DECODE_FIELD.search(err.message)
        cause = found.group(1) if found else "<body>"
        return Admission(stored=obj, causes=[cause], undecodable=True)
    # The status subresource: a create's status is dropped, as kube-apiserver does.
    obj.pop("status", None)
    causes = [c.field for c in validate_metadata(obj, kind.name_rule, kind.namespaced)]
    report = apply_schema(obj, kind.schema or {})
    causes += [c.field for c in report.causes] + report.unknown
    return Admission(stored=obj, causes=causes)


def our_verdict(doc: Any) -> list[Violation]:
    """Every problem our read path reports for a stored object (empty: it acts on it)."""
    try:
        obj = parse_ray_object(doc)
    except InvalidObjectError as err:
        return err.violations
    return validate(obj)


def path_matches(reported: str, expected: str) -> bool:
    """Whether a reported field path is the expected one or lies below it."""
    return reported == expected or reported.startswith((expected + ".", expected + "["))
