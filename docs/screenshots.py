"""Screenshots of the Temporal UI for the README: RayJobs by RayState, one RayJob's history.

Runs the local stack (`kuberay-temporal dev`, the process runtime: real Ray, needs root) in a
temporary directory, applies RayJobs made from `samples/` with kubectl (two that complete, one
that fails, one still running, one suspended), waits for their states with `kubectl wait`, and
drives Debian's headless Chromium over the DevTools protocol to capture, once the page shows
what it should:

* `docs/ui-rayjobs.png`: the workflow list filtered by `LIST_QUERY`, with a `RayState` column;
* `docs/ui-rayjob-history.png`: the history of the completed HTTPMode RayJob.

    sudo apt-get install chromium
    .venv/bin/python -m docs.screenshots

Then it stops the stack with Ctrl-C's signal, as a user would. Not run in CI, where there is
no Chromium; `tests/docs/test_screenshots.py` covers the pure parts (URLs, manifests).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import yaml
from temporalio.client import Client

from devcluster.ports import free_port
from kuberay_temporal.binaries import kubectl

REPO = Path(__file__).resolve().parent.parent
NAMESPACE = "default"
LIST_QUERY = 'RayKind = "RayJob" AND RayState IN ("Complete", "Failed")'
LIST_COLUMNS = ("Status", "Workflow ID", "RayState", "Type", "Start")
# Shown in both pictures: its history is the second one.
HISTORY_JOB = "sum-of-squares"
QUICK = 'python -c "import ray; ray.init(); print(ray.get(ray.remote(lambda: 6 * 7).remote()))"'


@dataclass(frozen=True)
class Job:
    """One RayJob of the scene: which sample it starts from and the state it is shown in."""

    name: str
    mode: str
    state: str
    spec: dict[str, Any] = field(default_factory=dict)


# Head-only clusters: at most three small Ray clusters at once on a 2-core machine.
FINISHING = (
    Job(HISTORY_JOB, "http", "Complete"),
    Job("nightly-report", "k8s-job", "Complete", {"entrypoint": QUICK}),
    Job("bad-input", "http", "Failed", {"entrypoint": "python -c 'raise SystemExit(2)'"}),
)
LASTING = (
    Job("train", "http", "Running", {"entrypoint": "python -c 'import time; time.sleep(3600)'"}),
    Job("on-hold", "http", "Suspended", {"entrypoint": QUICK, "suspend": True}),
)


def list_url(ui: str, query: str, namespace: str = NAMESPACE) -> str:
    """Return the UI's workflow list filtered by a visibility query."""
    return f"{ui}/namespaces/{quote(namespace, safe='')}/workflows?query={quote(query, safe='')}"


def history_url(ui: str, workflow_id: str, run_id: str, namespace: str = NAMESPACE) -> str:
    """Return the UI's history page of one run (a workflow id has slashes: encoded)."""
    return (
        f"{ui}/namespaces/{quote(namespace, safe='')}/workflows/"
        f"{quote(workflow_id, safe='')}/{quote(run_id, safe='')}/history"
    )


def table_columns(columns: tuple[str, ...], namespace: str = NAMESPACE) -> str:
    """Return the UI's stored column choice (localStorage) for a namespace's workflow list.

    The UI keeps the columns a user picked under `namespace-workflow-table-columns`; a search
    attribute is a column like any other. The first two stay pinned, as by default.
    """
    chosen = [{"label": label, "pinned": index < 2} for index, label in enumerate(columns)]
    return json.dumps({namespace: chosen})


# The list gets a RayState column; the history is shown compact (one row per activity,
# newest first, with its summary); the navigation is folded away.
UI_SETTINGS = {
    "namespace-workflow-table-columns": table_columns(LIST_COLUMNS),
    "navOpen": "false",
    "eventView": '"compact"',
}
LIST_SIZE = (1400, 500)
HISTORY_SIZE = (1400, 1150)
# After the awaited text shows, the list and the timeline still fade in and lay out.
SETTLE_SECONDS = 2.0


def manifest(job: Job) -> dict[str, Any]:
    """Return the sample of the job's mode under its name, head only, with its spec changes."""
    doc: dict[str, Any] = yaml.safe_load(
        (REPO / "samples" / f"rayjob.{job.mode}-mode.yaml").read_text()
    )
    doc["metadata"]["name"] = job.name
    doc["spec"].update(job.spec)
    doc["spec"]["rayClusterSpec"].pop("workerGroupSpecs", None)
    doc["spec"].pop("ttlSecondsAfterFinished", None)
    return doc


@dataclass
class Stack:
    """A running `kuberay-temporal dev` in a scratch directory."""

    root: Path
    temporal: str
    ui: str

    @property
    def kubeconfig(self) -> Path:
        """Return the kubeconfig devcluster wrote."""
        return self.root / "state" / "kubeconfig"

    async def kubectl(self, *args: str) -> str:
        """Run kubectl against devcluster; fail on a non-zero exit."""
        process = await asyncio.create_subprocess_exec(
            str(kubectl()),
            f"--kubeconfig={self.kubeconfig}",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        if process.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {err.decode().strip()}")
        return out.decode()

    async def apply(self, jobs: tuple[Job, ...]) -> None:
        """Apply the jobs' manifests, then wait until each shows its state."""
        path = self.root / f"{jobs[0].name}.yaml"
        path.write_text(yaml.safe_dump_all([manifest(job) for job in jobs]))
        await self.kubectl("apply", "-f", str(path))
        for job in jobs:
            print(f"waiting for rayjob/{job.name} to be {job.state}", flush=True)
            await self.kubectl(
                "wait",
                f"rayjob/{job.name}",
                f"--for=jsonpath={{.status.jobDeploymentStatus}}={job.state}",
                "--timeout=600s",
            )


@contextlib.asynccontextmanager
async def local_stack(root: Path) -> AsyncIterator[Stack]:
    """Run the stack until the block ends, then stop it as Ctrl-C does."""
    temporal, ui, kube = (free_port() for _ in range(3))
    log = root / "dev.log"
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "kuberay_temporal", "dev", "--state-dir", str(root / "state")),
            *("--temporal-port", str(temporal), "--ui-port", str(ui), "--kube-port", str(kube)),
            *("--runtime", "process"),
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while b"Ctrl-C stops everything" not in log.read_bytes():
            if process.returncode is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the stack did not come up:\n{log.read_text()}")
            await asyncio.sleep(0.2)
        yield Stack(root, f"127.0.0.1:{temporal}", f"http://127.0.0.1:{ui}")
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(process.wait(), 120)
            except TimeoutError:
                process.kill()
                await process.wait()


class Browser:
    """Headless Chromium driven over the DevTools protocol (one page)."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._next = 0

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and return its result; events in between are skipped."""
        self._next += 1
        await self._ws.send_json({"id": self._next, "method": method, "params": params})
        while True:
            message = await self._ws.receive_json(timeout=60)
            if message.get("id") == self._next:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))

    async def evaluate(self, expression: str) -> Any:
        """Return the value of a JavaScript expression in the page (promises awaited)."""
        result = await self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        return result.get("result", {}).get("value")

    async def until(self, expression: str, within: float) -> None:
        """Wait until a JavaScript expression is true in the page; fail with what it shows."""
        deadline = time.monotonic() + within
        while not await self.evaluate(expression):
            if time.monotonic() > deadline:
                text = await self.evaluate("document.body && document.body.innerText")
                raise RuntimeError(f"the page never made {expression} true; it shows:\n{text}")
            await asyncio.sleep(0.25)

    async def shoot(
        self, url: str, shows: list[str], out: Path, size: tuple[int, int], within: float = 60
    ) -> None:
        """Open `url` in a `size` viewport; once it shows every text in `shows`, save a PNG."""
        width, height = size
        await self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        await self.call("Page.navigate", url=url)
        probe = "(() => { const t = document.body ? document.body.innerText : ''; "
        probe += f"return {json.dumps(shows)}.every(s => t.includes(s)); }})()"
        await self.until(probe, within)
        # The list and the timeline fade in and lay out after their data arrives.
        await self.evaluate("document.fonts.ready.then(() => true)")
        await asyncio.sleep(SETTLE_SECONDS)
        shot = await self.call("Page.captureScreenshot", format="png")
        png = base64.b64decode(shot["data"])
        await asyncio.to_thread(out.write_bytes, png)
        print(f"wrote {out} ({len(png) // 1024} KB)", flush=True)


@contextlib.asynccontextmanager
async def chromium(profile: Path, storage: dict[str, str], origin: str) -> AsyncIterator[Browser]:
    """Start headless Chromium with `storage` in the origin's localStorage; yield its page."""
    binary = shutil.which("chromium")
    if binary is None:
        raise RuntimeError("chromium is not installed (apt-get install chromium)")
    args = [binary, "--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to start its sandbox as root
    args += [
        f"--user-data-dir={profile}",
        "--remote-debugging-port=0",
        "about:blank",
    ]
    process = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        active = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not active.exists() or not active.read_text().strip():
            if process.returncode is not None or time.monotonic() > deadline:
                raise RuntimeError("chromium did not open its DevTools port")
            await asyncio.sleep(0.1)
        port = active.read_text().split()[0]
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/json/list") as response:
                targets = await response.json()
            page = next(t for t in targets if t["type"] == "page")
            async with session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                browser = Browser(ws)
                # The UI reads its settings from localStorage when it starts: set them first.
                await browser.call("Page.navigate", url=f"{origin}/")
                await browser.until(f"location.origin === {json.dumps(origin)}", 30)
                for key, value in storage.items():
                    await browser.evaluate(
                        f"localStorage.setItem({json.dumps(key)}, {json.dumps(value)})"
                    )
                yield browser
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()


async def find_runs(client: Client, query: str, count: int, within: float = 60) -> list[Any]:
    """Return the runs a visibility query lists, once there are `count` (indexing lags)."""
    deadline = time.monotonic() + within
    while True:
        runs = [run async for run in client.list_workflows(query)]
        if len(runs) >= count:
            return runs
        if time.monotonic() > deadline:
            raise RuntimeError(f"{query!r} lists {len(runs)} runs, not {count}")
        await asyncio.sleep(0.5)


async def main(out_dir: Path) -> None:
    """Stage the RayJobs on a fresh stack and take both screenshots."""
    with tempfile.TemporaryDirectory(prefix="screenshots-") as scratch:
        root = Path(scratch)
        async with local_stack(root) as stack:
            await stack.apply(FINISHING)
            await stack.apply(LASTING)
            await take_screenshots(stack, out_dir)


async def take_screenshots(stack: Stack, out_dir: Path) -> None:
    """Take both screenshots of a stack on which the RayJobs reached their states."""
    client = await Client.connect(stack.temporal)
    listed = await find_runs(client, LIST_QUERY, 3)
    story = (await find_runs(client, f'RayKind = "RayJob" AND RayName = "{HISTORY_JOB}"', 1))[0]
    async with chromium(stack.root / "chromium", UI_SETTINGS, stack.ui) as browser:
        await browser.shoot(
            list_url(stack.ui, LIST_QUERY),
            [run.id for run in listed],
            out_dir / "ui-rayjobs.png",
            LIST_SIZE,
        )
        await browser.shoot(
            history_url(stack.ui, story.id, story.run_id),
            [story.id, "write status Complete"],
            out_dir / "ui-rayjob-history.png",
            HISTORY_SIZE,
        )


def cli() -> None:
    """Parse the options and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=REPO / "docs")
    options = parser.parse_args()
    asyncio.run(main(options.out_dir))


if __name__ == "__main__":
    cli()
