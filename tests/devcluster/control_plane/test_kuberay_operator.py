"""KubeRay's operator as a process: its flags, readiness, stop and an exit on its own.

The process tests run a stand-in executable (a few lines of Python that answer the readiness
probe the way controller-runtime does, or exit at once), so they need no Go build; the real
operator runs beside ours in `tests/differential/`.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from devcluster.control_plane.kuberay import KubeRayOperator, operator_args

SERVES_READYZ = """
import http.server, sys
port = int(next(a for a in sys.argv if a.startswith("--health-probe")).rsplit(":", 1)[1])
class Ready(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/readyz" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
print("serving", sys.argv[1:], flush=True)
http.server.HTTPServer(("127.0.0.1", port), Ready).serve_forever()
"""


def stand_in(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "kuberay-operator"
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return path


def test_flags_limit_it_to_its_namespaces_through_the_api_server_proxy() -> None:
    args = operator_args(Path("/k/config"), ["kr", "kr2"], 18080, 18081)

    assert args == [
        "--kubeconfig=/k/config",
        "--watch-namespace=kr,kr2",
        "--use-kubernetes-proxy",
        "--metrics-addr=127.0.0.1:18080",
        "--health-probe-bind-address=127.0.0.1:18081",
        "--enable-leader-election=false",
        "--log-stdout-encoder=console",  # no --feature-gates: v1.7.0's defaults, as installed
    ]


def test_it_runs_with_the_batch_scheduler_ours_runs_with() -> None:
    args = operator_args(Path("/k/config"), ["kr"], 18080, 18081, batch_scheduler="yunikorn")
    assert args[0] == "--batch-scheduler=yunikorn"
    assert not any("batch" in a for a in operator_args(Path("/k/config"), ["kr"], 1, 2))


def test_it_runs_with_the_feature_gates_ours_runs_with() -> None:
    gates = "RayClusterMTLS=true,RayCronJob=true"
    args = operator_args(Path("/k/config"), ["kr"], 18080, 18081, feature_gates=gates)
    assert f"--feature-gates={gates}" in args


def test_no_namespace_is_refused_as_it_would_mean_all(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one namespace"):
        KubeRayOperator(tmp_path / "op", tmp_path / "config", [], tmp_path / "log")


async def test_ready_when_the_probe_answers_and_gone_after_the_block(tmp_path: Path) -> None:
    binary, log = stand_in(tmp_path, SERVES_READYZ), tmp_path / "logs" / "kuberay.log"
    operator = KubeRayOperator(binary, tmp_path / "config", ["kr"], log)

    async with operator:
        pid = operator.pid
        assert pid is not None
        assert "--watch-namespace=kr" in log.read_text()

    assert operator.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_an_operator_that_exits_at_start_is_an_error_naming_its_log(tmp_path: Path) -> None:
    binary, log = stand_in(tmp_path, "raise SystemExit(3)\n"), tmp_path / "kuberay.log"

    with pytest.raises(RuntimeError, match=f"exited with 3 \\(see {log}\\)"):
        async with KubeRayOperator(binary, tmp_path / "config", ["kr"], log):
            pytest.fail("started")


async def test_an_exit_while_running_is_reported(tmp_path: Path) -> None:
    binary, log = stand_in(tmp_path, SERVES_READYZ), tmp_path / "kuberay.log"

    async with KubeRayOperator(binary, tmp_path / "config", ["kr"], log) as operator:
        assert operator.pid is not None
        os.kill(operator.pid, signal.SIGKILL)
        said = await operator.exited()

    assert said == f"KubeRay's operator exited with -9 (see {log})"
