"""One container as a local process tree, in the pod's network namespace and its own others.

A container is `nsenter --net=<pod netns> unshare --mount --uts --pid --fork --mount-proc`
running the mount script (see `volumes`) which then execs the command. The PID namespace
gives the container what a container runtime gives it: its command is PID 1 (so, as in a
container, it ignores SIGTERM unless it handles it), and when PID 1 exits the kernel kills
every other process in the container, so nothing is left behind. `--kill-child` ties the
container to its `unshare` parent, so if devcluster itself is killed its containers die too.

Stopping follows the kubelet: SIGTERM to PID 1, then SIGKILL once the grace period is over.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from devcluster.parent_death import die_with_parent

_UNSHARE = ("unshare", "--mount", "--uts", "--pid", "--fork", "--kill-child", "--mount-proc")
_NO_CHILD = -1


def launch_argv(netns_path: str | None, script: str, command: Sequence[str]) -> list[str]:
    """Return the host argv that runs `command` as a container behind the mount script."""
    enter = ["nsenter", f"--net={netns_path}", "--"] if netns_path else []
    return [*enter, *_UNSHARE, "--propagation", "private", "--", "/bin/sh", "-c", script,
            "sh", *command]  # fmt: skip


def exit_code(returncode: int, killed: bool, unshare_said: str) -> int:
    """Return a container's exit code from what its `unshare` parent reported.

    unshare passes a normal exit through; when PID 1 died of a signal it exits 1 after
    complaining, so a signal death shows as 137 (SIGKILL) as container runtimes report it.
    """
    if returncode < 0:
        return 128 - returncode
    if returncode == 1 and (killed or "sigprocmask" in unshare_said):
        return 128 + signal.SIGKILL
    return returncode


class ContainerProcess:
    """A started container: its `unshare` parent and the host PID of its PID 1."""

    def __init__(
        self, process: asyncio.subprocess.Process, log_file: Path, env: Mapping[str, str]
    ) -> None:
        self._process = process
        self.log_file = log_file
        self.env = dict(env)  # the container's environment, which `kubectl exec` also gets
        self._killed = False
        self.init_pid = _NO_CHILD

    @classmethod
    async def start(
        cls,
        netns_path: str | None,
        script: str,
        command: Sequence[str],
        env: Mapping[str, str],
        log_file: Path,
    ) -> ContainerProcess:
        """Start a container whose output is appended to `log_file`."""
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with log_file.open("ab") as log:
            process = await asyncio.create_subprocess_exec(
                *launch_argv(netns_path, script, command),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=dict(env),
                start_new_session=True,
                # If devcluster dies (even by SIGKILL), the kernel kills unshare, and its
                # --kill-child then kills the container: no pod outlives its node.
                preexec_fn=die_with_parent,
            )
        container = cls(process, log_file, env)
        await container._find_init()
        return container

    async def _find_init(self) -> None:
        # unshare forks PID 1 right after it starts; its host PID is unshare's only child.
        children = Path(f"/proc/{self._process.pid}/task/{self._process.pid}/children")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and self._process.returncode is None:
            with contextlib.suppress(OSError):
                text = children.read_text().split()  # noqa: ASYNC240 (procfs never blocks)
                if text:
                    self.init_pid = int(text[0])
                    return
            await asyncio.sleep(0.01)

    @property
    def pid(self) -> int:
        """The host PID of the `unshare` parent."""
        return self._process.pid

    def running(self) -> bool:
        """Return whether the container has not exited yet."""
        return self._process.returncode is None

    async def wait(self) -> int:
        """Wait for the container to exit; return its exit code."""
        returncode = await self._process.wait()
        return exit_code(returncode, self._killed, "")

    def signal(self, signum: int) -> None:
        """Send a signal to the container's PID 1."""
        if signum == signal.SIGKILL:
            self._killed = True
        target = self.init_pid if self.init_pid != _NO_CHILD else self._process.pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(target, signum)

    async def stop(self, grace: float) -> int:
        """SIGTERM, wait up to `grace` seconds, then SIGKILL; return the exit code."""
        if self.running():
            self.signal(signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._process.wait()), max(grace, 0.0))
        if self.running():
            self.kill()
        return await self.wait()

    def kill(self) -> None:
        """SIGKILL PID 1 (the kernel then kills the rest) and the unshare parent."""
        self.signal(signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._process.pid, signal.SIGKILL)

    def enter_argv(self) -> list[str] | None:
        """Return the host argv prefix that runs a command inside this container, if it runs.

        The command joins the namespaces of the container's PID 1 (so it is one of the
        container's processes) and starts in PID 1's working directory, the container's
        `workingDir`. That directory is not named: nsenter (2.38) opens a `--wd=<dir>` before
        it enters the mount namespace, so it would find the host's directory of that name.
        """
        if self.init_pid == _NO_CHILD or not self.running():
            return None
        return ["nsenter", f"--target={self.init_pid}", "--net", "--mount", "--uts", "--pid",
                "--wd", "--"]  # fmt: skip

    async def exec(self, command: Sequence[str], env: Mapping[str, str], limit: float) -> int:
        """Run a command inside the container's namespaces (exec probes); return its exit code."""
        enter = self.enter_argv()
        if enter is None:
            return 1
        process = await asyncio.create_subprocess_exec(
            *enter,
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=dict(env),
            start_new_session=True,
        )
        try:
            return await asyncio.wait_for(process.wait(), limit)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            return 1
