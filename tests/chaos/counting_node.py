"""devcluster's node of a real control plane (simulated runtime), counting Ray submissions.

Run as `python -m tests.chaos.counting_node --api-url URL --pki-dir DIR --state-dir DIR
--kubelet-port PORT` with
`CHAOS_SUBMISSION_LOG` naming a file: the chaos suite's node when the control plane is a real
one, killed and restarted as a kubelet may be. Its simulated heads log every job they create
(`counting_devcluster.counting`); nothing else about the node changes.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
from pathlib import Path

from devcluster.node import NodeAgent, NodeConfig
from devcluster.ray_simulator.dashboard import SimulatedHead
from tests.chaos.counting_devcluster import LOG_ENV, counting


async def run(config: NodeConfig) -> None:
    """Run the node until SIGTERM."""
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with NodeAgent(config):
        await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--api-url", required=True)
    parser.add_argument("--pki-dir", type=Path, required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--kubelet-port", type=int, required=True)
    parser.add_argument("--ready-delay", type=float, default=0.5)
    args = parser.parse_args()
    # The supervisor keeps this process's output in node.log: what the node did, for a failure.
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    SimulatedHead.submit = counting(SimulatedHead.submit, Path(os.environ[LOG_ENV]))  # type: ignore[method-assign,assignment]
    config = NodeConfig(
        api_url=args.api_url,
        pki_dir=args.pki_dir,
        state_dir=args.state_dir,
        runtime="simulated",
        kubelet_port=args.kubelet_port,
        ready_delay=args.ready_delay,
    )
    asyncio.run(run(config))


if __name__ == "__main__":
    main()
