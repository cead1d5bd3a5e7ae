"""Simulated Ray jobs: what an entrypoint does, and a job's state as a function of time.

A job never runs anything: `plan` reads its duration, exit code and output from the
entrypoint text, and `SimulatedJob.info(now)` derives PENDING, RUNNING, SUCCEEDED, FAILED or
STOPPED from the submission time, the plan and a stop, with the fields and messages Ray 2.60
reports. Pure: no clock, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

JsonObject = dict[str, Any]
PENDING_SECONDS = 0.2
"""Time from submission to RUNNING (Ray sets up the runtime env and starts the driver)."""
DEFAULT_SECONDS = 0.5
"""How long an entrypoint without `sleep` runs."""
NODE_ID = "simulated" + "0" * 47  # Ray node ids are 56 hex characters
DRIVER_ADDRESS = "http://127.0.0.1:52365"

_SLEEP = re.compile(r"\b(?:time\.)?sleep[ (]+(\d+(?:\.\d+)?)")
_EXIT = re.compile(r"\b(?:sys\.)?exit[ (]+(\d+)")
_ECHO = re.compile(r"\becho +(?:'([^']*)'|\"([^\"]*)\"|([^;&|\n]*))")


@dataclass(frozen=True)
class Plan:
    """What a simulated entrypoint does: run `seconds`, then exit with `exit_code`."""

    seconds: float
    exit_code: int
    output: tuple[str, ...]


def plan(entrypoint: str, default_seconds: float = DEFAULT_SECONDS) -> Plan:
    """Read a job's behaviour from its entrypoint.

    `sleep N` / `time.sleep(N)`: runs N seconds (all of them added up; none: `default_seconds`).
    `exit N` / `sys.exit(N)`: the last one is the exit code (none: 0; non-zero: FAILED).
    `echo TEXT`: TEXT is a line of the job's logs.
    """
    sleeps = [float(s) for s in _SLEEP.findall(entrypoint)]
    exits = [int(e) for e in _EXIT.findall(entrypoint)]
    output = tuple(
        next(g for g in m.groups() if g is not None).strip() for m in _ECHO.finditer(entrypoint)
    )
    seconds = sum(sleeps) if sleeps else default_seconds
    return Plan(seconds=seconds, exit_code=exits[-1] if exits else 0, output=output)


@dataclass
class SimulatedJob:
    """One submitted job; its status follows from the clock (seconds since the epoch)."""

    submission_id: str
    entrypoint: str
    submitted_at: float
    plan: Plan
    metadata: dict[str, str] | None = None
    runtime_env: JsonObject | None = None
    stopped_at: float | None = None

    @property
    def started_at(self) -> float:
        """When the driver starts running."""
        return self.submitted_at + PENDING_SECONDS

    @property
    def ends_at(self) -> float:
        """When the driver exits on its own."""
        return self.started_at + self.plan.seconds

    def status(self, now: float) -> str:
        """PENDING, RUNNING, STOPPED, SUCCEEDED or FAILED at `now`."""
        if self.stopped_at is not None and self.stopped_at < self.ends_at:
            return "STOPPED"
        if now >= self.ends_at:
            return "SUCCEEDED" if self.plan.exit_code == 0 else "FAILED"
        return "RUNNING" if now >= self.started_at else "PENDING"

    def terminal(self, now: float) -> bool:
        """Whether the job will not change any more."""
        return self.status(now) in ("STOPPED", "SUCCEEDED", "FAILED")

    def stop(self, now: float) -> bool:
        """Stop the job if it is still going; whether it was."""
        if self.terminal(now):
            return False
        self.stopped_at = now
        return True

    def logs(self, now: float) -> str:
        """The driver's log so far."""
        if self.status(now) == "PENDING":
            return ""
        lines = [f"Running entrypoint for job {self.submission_id}: {self.entrypoint}"]
        if self.status(now) != "STOPPED" and now >= self.ends_at:
            lines += self.plan.output
        return "".join(line + "\n" for line in lines)

    def info(self, now: float) -> JsonObject:
        """`GET /api/jobs/<id>`, with the keys and value types of Ray 2.60."""
        status = self.status(now)
        started = status != "PENDING"
        end = self.stopped_at if status == "STOPPED" else self.ends_at
        messages = {
            "PENDING": "Job has not started yet.",
            "RUNNING": "Job is currently running.",
            "SUCCEEDED": "Job finished successfully.",
            "STOPPED": "Job was intentionally stopped.",
            "FAILED": (
                f"Job entrypoint command failed with exit code {self.plan.exit_code}, last "
                f"available logs (truncated to 20,000 chars):\n{self.logs(now)}"
            ),
        }
        exit_code = {"SUCCEEDED": 0, "FAILED": self.plan.exit_code}.get(status)
        return {
            "type": "SUBMISSION",
            "job_id": None,
            "submission_id": self.submission_id,
            "driver_info": None,
            "status": status,
            "entrypoint": self.entrypoint,
            "message": messages[status],
            "error_type": "JOB_ENTRYPOINT_COMMAND_ERROR" if status == "FAILED" else None,
            "start_time": int(self.submitted_at * 1000),
            "end_time": int((end or 0) * 1000) if self.terminal(now) else None,
            "metadata": self.metadata,
            "runtime_env": self.runtime_env,
            "driver_agent_http_address": DRIVER_ADDRESS if started else None,
            "driver_node_id": NODE_ID if started else None,
            "driver_exit_code": exit_code,
        }
