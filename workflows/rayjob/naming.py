"""Names a RayJob attempt gets: its Ray job id and its RayCluster's name (KubeRay J2, J3).

Both are chosen once per attempt and written to the status before anything is created, so a
retried activity or a restarted worker finds them again instead of creating twins. Randomness
is the workflow's seeded `workflow.random()`, passed in, so replay picks the same names.
"""

from __future__ import annotations

import random

from crds.constants import LABEL_CLUSTER
from crds.enums import JobSubmissionMode
from crds.rayjob import RayJobSpec

SUFFIX_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
"""KubeRay's `utilrand.String` draws lowercase alphanumerics."""
SUFFIX_LENGTH = 5


def random_suffix(rng: random.Random) -> str:
    """Five random lowercase alphanumerics."""
    return "".join(rng.choice(SUFFIX_ALPHABET) for _ in range(SUFFIX_LENGTH))


def job_id(name: str, spec: RayJobSpec, rng: random.Random) -> str | None:
    """`spec.jobId`, else `<rayjob>-<5 random>`; InteractiveMode waits for the user's id."""
    if spec.submission_mode == JobSubmissionMode.INTERACTIVE:
        return None
    if spec.job_id:
        return spec.job_id
    return f"{name}-{random_suffix(rng)}"


def cluster_name(name: str, spec: RayJobSpec, rng: random.Random) -> str:
    """The `ray.io/cluster` of `clusterSelector`, else `<rayjob>-<5 random>`."""
    selected = (spec.cluster_selector or {}).get(LABEL_CLUSTER)
    if selected:
        return selected
    return f"{name}-{random_suffix(rng)}"


def uses_selector(spec: RayJobSpec) -> bool:
    """Whether the RayJob borrows an existing cluster (never created, never deleted)."""
    return bool(spec.cluster_selector)
