"""The command on a runtime-only install (the image): no devcluster, and it says so.

devcluster is a distribution of its own, in the `local` extra; the image installs only the
runtime. Every other subcommand must work without it, and `dev` or `devcluster` must name the
extra rather than fail on an import or vanish from the command.
"""

from __future__ import annotations

import subprocess
import sys

# Hide devcluster as if it were not installed (an import of a None entry fails).
_WITHOUT_DEVCLUSTER = "import sys; sys.modules['devcluster'] = None; "


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    code = (
        _WITHOUT_DEVCLUSTER
        + f"from kuberay_temporal.cli import main; sys.exit(main({list(args)!r}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_the_local_stack_commands_name_the_extra_to_install() -> None:
    for command in ("dev", "devcluster"):
        done = _cli(command, "--state-dir", "x")
        assert done.returncode == 2, done.stderr
        assert "pip install 'kuberay-temporal[local]'" in done.stderr


def test_the_runtime_commands_do_not_need_devcluster() -> None:
    for command in ("worker", "bridge", "validate", "crds", "status", "codec-server"):
        done = _cli(command, "--help")
        assert done.returncode == 0, f"{command}: {done.stderr}"
        assert "usage: kuberay-temporal" in done.stdout
