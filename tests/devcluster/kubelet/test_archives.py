"""A process pod downloads KubeRay's GitHub archives at their URLs, as Ray does, and no more.

Needs root (network namespaces), like every process-runtime test, and KubeRay's reference data
beside the checkout (`tests.reference`), whose archives the node serves.
"""

from __future__ import annotations

import hashlib
import os
import shlex

import pytest

from devcluster.networking.archives import default_archives_dir
from devcluster.server import DevCluster
from tests.devcluster.conftest import Kubectl
from tests.devcluster.kubelet.conftest import run_to_end
from tests.reference import KUBERAY_DIR

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root")

ZIP = "test_dag-78b4a5da38796123d9f9ffff59bab2792a043e95.zip"
URL = "https://github.com/ray-project/test_dag/archive/78b4a5da38796123d9f9ffff59bab2792a043e95.zip"
# Ray's own download of a remote `working_dir` (smart_open over requests), then what else a pod
# might try: another path of github.com, and a host the node does not stand in for.
CLIENT = f"""
import hashlib, requests, socket
from ray._private.runtime_env.protocol import ProtocolsProvider
ProtocolsProvider.download_remote_uri("https", "{URL}", "/tmp/working_dir.zip")
print("sha256", hashlib.sha256(open("/tmp/working_dir.zip", "rb").read()).hexdigest())
other = requests.get("https://github.com/ray-project/kuberay/archive/master.zip", timeout=30)
print("other", other.status_code)
try:
    pypi = socket.gethostbyname("pypi.org")
except OSError:
    pypi = None
print("pypi-is-the-node", pypi == socket.gethostbyname("github.com"))
"""


async def test_a_pod_downloads_an_archive_as_ray_does_and_nothing_else(
    node: tuple[DevCluster, Kubectl],
) -> None:
    _, kubectl = node
    assert default_archives_dir().resolve() == (KUBERAY_DIR / "archives").resolve()
    phase, logs = await run_to_end(kubectl, "client", f"python -c {shlex.quote(CLIENT)}", 90)
    print(logs)  # what Ray's download said, when it fails
    wanted = hashlib.sha256((KUBERAY_DIR / "archives" / ZIP).read_bytes()).hexdigest()
    # pypi.org resolves, if at all, to anything but the node: only GitHub's names are its own.
    assert (phase, logs.split()) == (
        "Succeeded",
        ["sha256", wanted, "other", "404", "pypi-is-the-node", "False"],
    )
