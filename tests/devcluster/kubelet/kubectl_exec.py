"""`kubectl exec` through a real API server to a node's kubelet-streams, by either protocol.

kubectl speaks v5 WebSocket to the API server, which translates it to SPDY for a node that
does not declare ExtendWebSocketsToKubelet; with KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false
kubectl speaks SPDY itself, which the API server passes through. Exec can work for one and
not the other, so an end-to-end test runs both: `PROTOCOLS` is its parameter list.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from tests.devcluster.conftest import KUBECTL, Result

PROTOCOLS = ("websocket", "spdy")


async def kubectl_exec(
    kubeconfig: Path,
    namespace: str,
    pod: str,
    command: Sequence[str],
    *,
    protocol: str,
    stdin: bytes | None = None,
    seconds: float = 60,
) -> Result:
    """Run `kubectl exec [-i] <pod> -- <command>`; stdin, when given, is piped and closed."""
    assert protocol in PROTOCOLS, protocol
    websockets = "true" if protocol == "websocket" else "false"
    env = {**os.environ, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": websockets}
    process = await asyncio.create_subprocess_exec(
        os.environ.get("KUBECTL", str(KUBECTL)),
        f"--kubeconfig={kubeconfig}",
        "exec",
        "-n",
        namespace,
        *(["-i"] if stdin is not None else []),
        pod,
        "--",
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), seconds)
    assert process.returncode is not None
    return Result(process.returncode, out.decode(), err.decode())
