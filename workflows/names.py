"""Random name suffixes, drawn as Kubernetes' `generateName` and KubeRay draw them.

KubeRay names a RayJob's cluster and job id, and a RayService's clusters, with apimachinery's
`rand.String(5)`; the API server's `generateName` (KubeRay's pods) uses the same alphabet. The
workflows draw from their seeded `workflow.random()`, so a replay draws the same names.
"""

from __future__ import annotations

import random

KUBERNETES_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""apimachinery's `rand.String`: no vowels (no accidental words), no 0, 1 or 3 (look-alikes)."""
SUFFIX_LENGTH = 5


def random_suffix(rng: random.Random, alphabet: str = KUBERNETES_ALPHABET) -> str:
    """Five characters of `alphabet`."""
    return "".join(rng.choice(alphabet) for _ in range(SUFFIX_LENGTH))
