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
from workflows.names import KUBERNETES_ALPHABET, random_suffix

LEGACY_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
"""What names were drawn from before `NAMES_PATCH` (every lowercase alphanumeric): kept for the
workflows that drew theirs so, which must draw the same on replay."""


def job_id(
    name: str, spec: RayJobSpec, rng: random.Random, alphabet: str = KUBERNETES_ALPHABET
) -> str | None:
    """`spec.jobId`, else `<rayjob>-<5 random>`; InteractiveMode waits for the user's id."""
    if spec.submission_mode == JobSubmissionMode.INTERACTIVE:
        return None
    if spec.job_id:
        return spec.job_id
    return f"{name}-{random_suffix(rng, alphabet)}"


def cluster_name(
    name: str, spec: RayJobSpec, rng: random.Random, alphabet: str = KUBERNETES_ALPHABET
) -> str:
    """The `ray.io/cluster` of `clusterSelector`, else `<rayjob>-<5 random>`."""
    selected = (spec.cluster_selector or {}).get(LABEL_CLUSTER)
    if selected:
        return selected
    return f"{name}-{random_suffix(rng, alphabet)}"


def uses_selector(spec: RayJobSpec) -> bool:
    """Whether the RayJob borrows an existing cluster (never created, never deleted)."""
    return bool(spec.cluster_selector)
