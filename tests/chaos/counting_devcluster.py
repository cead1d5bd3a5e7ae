"""`kuberay-temporal devcluster` whose simulated Ray heads also log every job they create.

Run as `python -m tests.chaos.counting_devcluster <devcluster flags>` with
`CHAOS_SUBMISSION_LOG` naming a file. Each job a simulated head *creates* (a submission Ray
accepted, not one refused because its submission id exists) appends one JSON line
`{"submission_id": ...}`. A head's own job list dies with its pod, and a RayJob's clusters
are deleted when it finishes, so this log is how the chaos suite counts, after the fact, how
often Ray took each submission id. Nothing else about devcluster changes.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devcluster.ray_simulator.dashboard import SimulatedHead
from kuberay_temporal.cli import main

LOG_ENV = "CHAOS_SUBMISSION_LOG"

Submit = Callable[[SimulatedHead, Any], tuple[int, str | None, str]]


def counting(original: Submit, log: Path) -> Submit:
    """Wrap `SimulatedHead.submit` so that every created job appends a line to `log`."""

    def submit(head: SimulatedHead, body: Any) -> tuple[int, str | None, str]:
        status, job_id, error = original(head, body)
        if status == 200:
            line = (json.dumps({"submission_id": job_id}) + "\n").encode()
            # One O_APPEND write per line: lines of concurrent heads never interleave, and
            # the page cache keeps it through a SIGKILL of this process.
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        return status, job_id, error

    return submit


def read_submissions(log: Path) -> list[str]:
    """Every submission id Ray created a job for, once per creation, in order."""
    if not log.exists():
        return []
    return [json.loads(line)["submission_id"] for line in log.read_text().splitlines() if line]


if __name__ == "__main__":
    SimulatedHead.submit = counting(SimulatedHead.submit, Path(os.environ[LOG_ENV]))  # type: ignore[method-assign,assignment]
    sys.exit(main(["devcluster", *sys.argv[1:]]))
