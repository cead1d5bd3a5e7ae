"""A simulated `ray job submit` container: KubeRay's submitter script, done over HTTP.

`parse` reads the script KubeRay's submitter (K8sJobMode's Job, SidecarMode's container) or a
user's own submitter runs (or the flags of KubeRay's light-weight Go submitter): the `ray job
submit` options (address, submission id, runtime env, metadata, `--no-wait`), the entrypoint
after `--`, whether `ray job status` guards the submit (K8sJobMode re-attaches instead of
submitting twice) and whether `ray job logs --follow` follows it. `run` then does what those
commands do against the (simulated) dashboard, and returns the exit code the real script would:
a blocking submit exits 1 when the job FAILED, `--no-wait` plus following the logs exits 0
whatever the job's outcome, and a rejected submission or an unknown followed job exits 1.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

JsonObject = dict[str, Any]
_VALUED = {"--address", "--submission-id", "--runtime-env-json", "--metadata-json", "--job-id"}
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
_TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Submission:
    """What a submitter script asks of Ray."""

    address: str
    entrypoint: str
    submission_id: str | None = None
    runtime_env: JsonObject | None = None
    metadata: dict[str, str] | None = None
    no_wait: bool = False
    check_first: bool = False
    follow: bool = False

    def body(self) -> JsonObject:
        """The `POST /api/jobs/` body `ray job submit` sends."""
        out: JsonObject = {"entrypoint": self.entrypoint}
        for key in ("submission_id", "runtime_env", "metadata"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


def is_submitter(container: Mapping[str, Any]) -> bool:
    """Whether a container runs `ray job submit`, or KubeRay's light-weight submitter."""
    return "ray job submit" in _script(container) or _light_weight(container)


def _light_weight(container: Mapping[str, Any]) -> bool:
    """KubeRay's Go submitter (`/submitter`, its `rayjob-submitter` image) instead of Ray's CLI."""
    command = container.get("command") or []
    return bool(command) and str(command[0]).rsplit("/", 1)[-1] == "submitter"


def _parse_light_weight(container: Mapping[str, Any], env: Mapping[str, str]) -> Submission | None:
    """What KubeRay's light-weight submitter asks: its flags, then the entrypoint after `--`.

    The address and the id come from the env KubeRay sets. It submits (a duplicate is
    re-attached to) and tails the job's logs to its end, exiting 0 whatever the outcome.
    """
    args = [
        _expand(str(a), env)
        for a in [*container.get("command", [])[1:], *(container.get("args") or [])]
    ]
    flags, _, entrypoint = args, None, []
    if "--" in args:
        cut = args.index("--")
        flags, entrypoint = args[:cut], args[cut + 1 :]
    values = dict(zip(flags[::2], flags[1::2], strict=False))
    address, job_id = env.get("RAY_DASHBOARD_ADDRESS", ""), env.get("RAY_JOB_SUBMISSION_ID", "")
    if not address or not job_id or not entrypoint:
        return None  # the real one exits 1 on these
    runtime_env, metadata = values.get("--runtime-env-json"), values.get("--metadata-json")
    return Submission(
        address=address if "://" in address else f"http://{address}",
        entrypoint=" ".join(entrypoint),
        submission_id=job_id,
        runtime_env=json.loads(runtime_env) if runtime_env else None,
        metadata=json.loads(metadata) if metadata else None,
        no_wait=True,
        check_first=True,
        follow=True,
    )


def _script(container: Mapping[str, Any]) -> str:
    return " ".join(
        str(p) for p in [*(container.get("command") or []), *(container.get("args") or [])]
    )


def _expand(text: str, env: Mapping[str, str]) -> str:
    return _VAR.sub(lambda m: env.get(m.group(1), ""), text)


def parse(container: Mapping[str, Any], env: Mapping[str, str]) -> Submission | None:
    """The submission a container's script makes (None if it makes none we understand)."""
    if _light_weight(container):
        return _parse_light_weight(container, env)
    script = _script(container)
    start = script.find("ray job submit")
    if start < 0:
        return None
    options, _, entrypoint = script[start + len("ray job submit") :].partition(" -- ")
    follow = re.search(r";\s*fi\s*;\s*ray job logs .*--follow.*$", entrypoint, re.S)
    if follow:
        entrypoint = entrypoint[: follow.start()]
    entrypoint = entrypoint.strip().removesuffix(";").strip()
    values: dict[str, str] = {}
    flags: set[str] = set()
    try:
        words = shlex.split(options)
    except ValueError:  # unbalanced quotes: bash would not run it either
        return None
    index = 0
    while index < len(words):
        word = words[index]
        name, eq, value = word.partition("=")
        if name in _VALUED and not eq and index + 1 < len(words):
            value, index = words[index + 1], index + 1
        if name in _VALUED:
            values[name] = _expand(value, env)
        elif word.startswith("--"):
            flags.add(word)
        index += 1
    address = (
        values.get("--address") or env.get("RAY_DASHBOARD_ADDRESS") or env.get("RAY_ADDRESS", "")
    )
    if not address or not entrypoint:
        return None
    return Submission(
        address=address if "://" in address else f"http://{address}",
        entrypoint=entrypoint,
        submission_id=values.get("--submission-id") or values.get("--job-id") or None,
        runtime_env=json.loads(values["--runtime-env-json"])
        if "--runtime-env-json" in values
        else None,
        metadata=json.loads(values["--metadata-json"]) if "--metadata-json" in values else None,
        no_wait="--no-wait" in flags,
        check_first="ray job status" in script[:start],
        follow=follow is not None,
    )


async def run(
    submission: Submission,
    base_url: Callable[[], str | None],
    token: str | None,
    stopping: asyncio.Event,
) -> int:
    """Do what the script does; return its exit code (143 if stopped first, like SIGTERM).

    Args:
        submission: From `parse`.
        base_url: Where the addressed dashboard is now (None: nothing answers there yet).
        token: Ray's auth token, sent as `ray job` sends it.
        stopping: Set when the pod is being deleted.
    """
    headers = {"x-ray-authorization": f"Bearer {token}"} if token else {}
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(headers=headers, timeout=timeout) as http:
        try:
            return await _run(submission, base_url, http, stopping)
        except _Stopped:
            return 143


class _Stopped(Exception):
    pass


async def _pause(stopping: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(stopping.wait(), seconds)
    except TimeoutError:
        return
    raise _Stopped


async def _get(
    http: aiohttp.ClientSession, base_url: Callable[[], str | None], path: str
) -> tuple[int, Any]:
    url = base_url()
    if url is None:
        return 0, None
    try:
        async with http.get(url + path) as response:
            text = await response.text()
    except (aiohttp.ClientError, TimeoutError):
        return 0, None
    try:
        return response.status, json.loads(text)
    except ValueError:
        return response.status, None


async def _run(
    submission: Submission,
    base_url: Callable[[], str | None],
    http: aiohttp.ClientSession,
    stopping: asyncio.Event,
) -> int:
    while (await _get(http, base_url, "/api/gcs_healthz"))[0] != 200:  # the script's wait
        await _pause(stopping, 2.0)
    job_id = submission.submission_id
    known = False
    if submission.check_first and job_id:
        known = (await _get(http, base_url, f"/api/jobs/{job_id}"))[0] == 200
    if not known:
        url = base_url()
        if url is None:
            return 1
        try:
            async with http.post(url + "/api/jobs/", json=submission.body()) as response:
                if response.status != 200:
                    return 1
                job_id = (await response.json(content_type=None))["submission_id"]
        except (aiohttp.ClientError, TimeoutError, ValueError, KeyError):
            return 1
    if submission.no_wait and not submission.follow:
        return 0
    while True:
        status, info = await _get(http, base_url, f"/api/jobs/{job_id}")
        if status == 404:
            return 1
        if info and info.get("status") in _TERMINAL:
            failed = info["status"] == "FAILED"
            return 1 if failed and not submission.no_wait else 0
        await _pause(stopping, POLL_SECONDS)
