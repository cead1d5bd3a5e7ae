"""Run the Temporal CLI's dev server as a child process of the local stack.

`kuberay-temporal dev` needs a real Temporal server whose state survives restarts: the
CLI's `start-dev` with a SQLite file in WAL mode (about three times the throughput of the
default journal) and the UI. This module builds its command line, starts it in its own
session so a terminal Ctrl-C reaches only us (we stop the worker first, then the server),
waits until the frontend answers, and stops it with SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.common import SearchAttributeKey
from temporalio.service import ConnectConfig, RPCError, ServiceClient

from worker.search_attributes import type_name

# Between two attempts to reach a starting server; it usually answers within 0.3 s.
_READY_POLL_INTERVAL = 0.05
# What starts the line of a fatal start-up error: a Go panic, the CLI's own error, a log record.
_CAUSE_PREFIXES = ("panic:", "Error:")
_CAUSE_LEVELS = ("level=ERROR", "level=FATAL")


class DevServerError(RuntimeError):
    """The dev server could not be started; the message says why in one line."""


@dataclass(frozen=True)
class DevServerOptions:
    """How to run the dev server."""

    state_dir: Path
    """Directory for the SQLite database and the server log."""
    port: int = 7233
    """Frontend gRPC port."""
    ui_port: int = 8233
    """Web UI port."""
    ip: str = "127.0.0.1"
    """Address both ports bind to."""
    namespace: str = "default"
    """Namespace to wait for; the dev server always creates `default`."""
    search_attributes: Sequence[SearchAttributeKey[Any]] = ()
    """Registered when the database is created (ignored for an existing database)."""
    startup_timeout: timedelta = timedelta(seconds=30)
    """How long the frontend may take to answer."""
    stop_grace: timedelta = timedelta(seconds=10)
    """How long SIGTERM may take before SIGKILL."""
    ui_codec_port: int | None = None
    """Where our codec server listens, for the UI to decode payloads; None: it shows them raw."""

    @property
    def address(self) -> str:
        """Return host:port of the gRPC frontend."""
        return f"{self.ip}:{self.port}"

    @property
    def ui_url(self) -> str:
        """Return the web UI's URL."""
        return f"http://{self.ip}:{self.ui_port}"

    @property
    def ui_codec_endpoint(self) -> str | None:
        """Return the codec server's URL the UI is given, if there is one."""
        return None if self.ui_codec_port is None else f"http://{self.ip}:{self.ui_codec_port}"

    @property
    def database(self) -> Path:
        """Return the SQLite file that holds all Temporal state."""
        return self.state_dir / "temporal.db"

    @property
    def log_file(self) -> Path:
        """Return the file the server's output is appended to."""
        return self.state_dir / "temporal.log"


def dev_server_command(binary: Path, options: DevServerOptions) -> list[str]:
    """Return the argv that starts the dev server.

    Args:
        binary: The `temporal` CLI.
        options: Ports, state directory and search attributes.

    Returns:
        The command line, ready for `asyncio.create_subprocess_exec`.
    """
    command = [
        str(binary),
        "server",
        "start-dev",
        "--ip",
        options.ip,
        "--port",
        str(options.port),
        "--ui-port",
        str(options.ui_port),
        "--db-filename",
        str(options.database),
        "--sqlite-pragma",
        "journal_mode=wal",
        "--sqlite-pragma",
        "synchronous=normal",
    ]
    for key in options.search_attributes:
        command += ["--search-attribute", f"{key.name}={type_name(key.indexed_value_type)}"]
    command += ["--log-level", "warn", "--ui-disable-news-fetch"]
    if options.ui_codec_endpoint is not None:
        command += ["--ui-codec-endpoint", options.ui_codec_endpoint]
    return command


class DevServer:
    """The dev server process: `async with DevServer(...)` starts it and stops it."""

    def __init__(self, binary: Path, options: DevServerOptions) -> None:
        self.binary = binary
        self.options = options
        self._process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int | None:
        """Return the server's process id once started."""
        return None if self._process is None else self._process.pid

    async def start(self) -> None:
        """Start the server and return once its frontend answers.

        Raises:
            DevServerError: A port is taken, the process exited, or it did not answer
                within the startup timeout.
        """
        options = self.options
        _check_port_free(options.ip, options.port, "gRPC")
        _check_port_free(options.ip, options.ui_port, "UI")
        options.state_dir.mkdir(parents=True, exist_ok=True)
        log_start = options.log_file.stat().st_size if options.log_file.exists() else 0
        with options.log_file.open("ab") as log:
            self._process = await asyncio.create_subprocess_exec(
                *dev_server_command(self.binary, options),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            await self._wait_until_ready(log_start)
        except BaseException:
            await self.stop()
            raise

    async def wait(self) -> int:
        """Wait until the process exits and return its exit code."""
        if self._process is None:
            raise RuntimeError("dev server was never started")
        return await self._process.wait()

    async def stop(self) -> int | None:
        """Stop the server: SIGTERM, then SIGKILL after the grace period.

        Returns:
            The exit code, or None if it was never started.
        """
        process = self._process
        if process is None:
            return None
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), self.options.stop_grace.total_seconds())
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
        return await process.wait()

    async def __aenter__(self) -> DevServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _wait_until_ready(self, log_start: int) -> None:
        """Poll the frontend until it answers, the process exits or time runs out."""
        assert self._process is not None
        ready = asyncio.create_task(_answering(self.options))
        exited = asyncio.create_task(self._process.wait())
        try:
            await asyncio.wait(
                {ready, exited},
                timeout=self.options.startup_timeout.total_seconds(),
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            ready.cancel()
            exited.cancel()
        if ready.done() and not ready.cancelled():
            ready.result()
            return
        log = self.options.log_file
        if exited.done() and not exited.cancelled():
            raise DevServerError(
                f"temporal dev server exited with code {exited.result()} during start-up: "
                f"{_cause(log, log_start)} (full log: {log})"
            )
        raise DevServerError(
            f"temporal dev server did not answer on {self.options.address} within "
            f"{self.options.startup_timeout.total_seconds():g} s (log: {log})"
        )


async def _answering(options: DevServerOptions) -> None:
    """Return once the frontend serves the namespace; retry while it refuses."""
    config = ConnectConfig(target_host=options.address)
    while True:
        try:
            client = await ServiceClient.connect(config)
            await client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace=options.namespace),
                timeout=timedelta(seconds=2),
            )
            return
        except (RuntimeError, RPCError):
            await asyncio.sleep(_READY_POLL_INTERVAL)


def _check_port_free(ip: str, port: int, role: str) -> None:
    """Raise DevServerError if something already listens on ip:port."""
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # The Go server binds with SO_REUSEADDR too, so a port in TIME_WAIT counts as free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((ip, port))
        except OSError as err:
            raise DevServerError(
                f"cannot start the Temporal dev server: {role} port {ip}:{port} is already "
                f"in use ({err.strerror}); stop what holds it or choose another port"
            ) from err


def _cause(log: Path, start: int) -> str:
    """Return the line that says why the server ended, from what it wrote after `start`.

    A Go panic ends with its stack trace, so the last line names a source file; the first
    error record or `panic:` line is the cause. Without one, the last line is all there is.
    """
    try:
        with log.open("rb") as file:
            file.seek(start)
            text = file.read().decode(errors="replace")
    except OSError:
        return "(no log)"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(_CAUSE_PREFIXES) or any(level in line for level in _CAUSE_LEVELS):
            return line
    return lines[-1] if lines else "(no output)"
