"""Run one of KubeRay's e2e test binaries (`go test -c`) and read what `-test.v` printed."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from devcluster.control_plane.building import KUBERAY_OPERATOR, Build

# `--- PASS: TestX/sub_test (1.23s)`, indented by four spaces per level of subtest.
_RESULT = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+) \(([\d.]+)s\)$")
# How a binary reports a test it could not finish: the deadline's panic names it.
_TIMED_OUT = re.compile(r"^panic: test timed out after \S+$")
_RUNNING = re.compile(r"^\s+(Test\S+) \(\S+\)$")


class Outcome(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"


@dataclass(frozen=True)
class Result:
    """One test or subtest as `go test -v` reported it."""

    name: str
    outcome: Outcome
    seconds: float


def results(output: str) -> dict[str, Result]:
    """Every test and subtest `output` reports, by its full name (`TestX/sub_test`).

    A binary that hit its `-test.timeout` prints no result for what was still running; those
    tests, named under "running tests:" after the panic, are reported failed.
    """
    found: dict[str, Result] = {}
    lines = output.splitlines()
    for line in lines:
        matched = _RESULT.match(line)
        if matched:
            outcome, name, seconds = matched.groups()
            found[name] = Result(name, Outcome(outcome), float(seconds))
    if any(_TIMED_OUT.match(line) for line in lines):
        for line in lines:
            running = _RUNNING.match(line)
            if running and running[1] not in found:
                found[running[1]] = Result(running[1], Outcome.FAIL, 0.0)
    return found


def package_dir(binaries: Build, package: str) -> Path:
    """The source folder of one of KubeRay's test packages, in the tree it was built from.

    `go test` runs a test binary there, and some tests read files relative to it
    (e2erayservice's `testdata/`).
    """
    return binaries.module_of(KUBERAY_OPERATOR) / "test" / package


async def run_test(
    binary: Path,
    run: str,
    *,
    skip: str = "",
    kubeconfig: Path,
    output_dir: Path,
    deadline: str = "30m",
    path_prefix: Path | None = None,
    workdir: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run the tests of `binary` that `run` selects and `skip` does not (`go test -run/-skip`).

    Returns what it printed; its exit code says no more than `results` reads from that.

    The tests find the cluster through KUBECONFIG, as client-go's default loading rules do,
    and use CI's timeouts (1, 5 and 10 minutes); some shell out to `kubectl`, found on PATH
    (`path_prefix` goes first). `workdir` is where it runs: its package's folder, as with
    `go test` (`package_dir`). `env` adds to its environment (a test's own switches).
    """
    path = os.environ.get("PATH", "")
    environment = {
        **os.environ,
        "PATH": f"{path_prefix}:{path}" if path_prefix else path,
        "KUBECONFIG": str(kubeconfig),
        "KUBERAY_TEST_OUTPUT_DIR": str(output_dir),
        "KUBERAY_TEST_TIMEOUT_SHORT": "1m",
        "KUBERAY_TEST_TIMEOUT_MEDIUM": "5m",
        "KUBERAY_TEST_TIMEOUT_LONG": "10m",
        **(env or {}),
    }
    process = await asyncio.create_subprocess_exec(
        str(binary),
        "-test.v",
        "-test.timeout",
        deadline,
        "-test.run",
        run,
        *(["-test.skip", skip] if skip else []),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=environment,
        cwd=workdir,
    )
    out, _ = await process.communicate()
    return out.decode(errors="replace")
