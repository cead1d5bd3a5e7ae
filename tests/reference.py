"""Where KubeRay's reference data (CRDs, samples) lives for the tests.

The repository is checked out with `shared/` beside it (in development and in CI); the
environment variable `KUBERAY_SHARED_DIR` points elsewhere when needed.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = Path(os.environ.get("KUBERAY_SHARED_DIR", REPO_ROOT.parent / "shared"))
KUBERAY_DIR = SHARED_DIR / "kuberay"
KUBERAY_SAMPLES = KUBERAY_DIR / "samples"
KUBERAY_CRDS = KUBERAY_DIR / "crd" / "bases"


def sample_files() -> list[Path]:
    """Every YAML file among KubeRay's samples; fails loudly when the data is missing."""
    files = sorted(KUBERAY_SAMPLES.rglob("*.yaml"))
    if not files:
        raise FileNotFoundError(
            f"KubeRay samples not found under {KUBERAY_SAMPLES}; set KUBERAY_SHARED_DIR"
        )
    return files
