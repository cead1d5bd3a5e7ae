"""Which local environment stands in for a container image.

There is no container runtime here, so an image name selects a local environment instead:
the PATH its commands resolve on, the environment variables the image would set, and the
image's default command (its ENTRYPOINT/CMD) for containers that give none. `rayproject/ray`
images run the locally installed Ray (the venv's bin dir comes first on PATH, so `ray`,
`python` and `bash -c "... ray start ..."` resolve to it); `redis` images run Debian's
`redis-server`, with the image's `/data` as their working directory; `kuberay/submitter` runs
KubeRay's submitter built from its Go module (`make kuberay`). A program a stand-in needs
that this machine lacks holds its containers with a message naming the program and its
install command. The table is data, so callers can map further images.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from devcluster.control_plane.building import KUBERAY_SUBMITTER, BuildError, default_build

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class ImageEnvironment:
    """A local environment: PATH entries before the system's, env and the default command."""

    path_prefix: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    home: str = "/root"  # where the pod's home directory appears (and HOME points)
    directories: tuple[str, ...] = ()
    """Directories the image has and its programs expect (its VOLUME, WORKDIR): each an empty
    per-pod directory, unless a volume is mounted there."""
    workdir: str = ""
    """The image's WORKDIR; empty: the home directory."""
    programs: tuple[tuple[str, str], ...] = ()
    """(program, the command that installs it): what the stand-in needs from this machine."""
    image_paths: tuple[tuple[str, str], ...] = ()
    """(absolute path in the image, the program on PATH standing in for it): a command that
    names the path (a FROM-scratch image's `/submitter`) runs that program."""
    profile: str = ""
    """The image's `~/.profile`: a login shell (`bash -l`) reads the host's /etc/profile, which
    resets PATH, and then this, as the image's own profile puts its programs back first."""


@dataclass(frozen=True)
class ImageRule:
    """Images whose repository (the name without tag or digest) starts with `prefix`."""

    prefix: str
    environment: ImageEnvironment


@dataclass(frozen=True)
class ImageMap:
    """Image rules in order; the first whose prefix matches wins."""

    rules: tuple[ImageRule, ...] = field(default_factory=tuple)
    fallback: ImageEnvironment = ImageEnvironment()

    def lookup(self, image: str) -> ImageEnvironment:
        """Return the environment an image runs in."""
        repository = repository_of(image)
        for rule in self.rules:
            if repository.startswith(rule.prefix):
                return rule.environment
        return self.fallback


def repository_of(image: str) -> str:
    """Return an image reference without tag, digest and the default registry prefixes."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    for prefix in ("docker.io/library/", "docker.io/", "library/"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


def command_line(
    environment: ImageEnvironment, command: Sequence[str], args: Sequence[str]
) -> list[str]:
    """Return argv as a container runtime builds it from the pod's command/args and the image.

    `command` replaces the image's ENTRYPOINT and, when given without `args`, drops its CMD
    too; `args` alone replaces only CMD.
    """
    argv = [*command, *args] if command else [*environment.entrypoint, *(args or environment.cmd)]
    stand_ins = dict(environment.image_paths)
    if argv and argv[0] in stand_ins:
        argv[0] = stand_ins[argv[0]]
    return argv


def default_image_map() -> ImageMap:
    """Return the mapping devcluster uses: Ray images on this venv's Ray, Redis on Debian's."""
    venv_bin = str(Path(sys.executable).parent)
    ray = ImageEnvironment(
        path_prefix=(venv_bin,),
        cmd=("bash",),
        home="/home/ray",
        profile=f'export PATH="{venv_bin}:$PATH"\n',
    )
    redis = ImageEnvironment(
        # The official image is built with protected mode off, so its default command
        # serves other pods without a password; Debian's binary has it on and would answer
        # every connection from outside the pod with DENIED.
        cmd=("redis-server", "--protected-mode", "no"),
        directories=("/data",),
        workdir="/data",
        programs=(("redis-server", "apt-get install redis-server"),),
    )
    return ImageMap(
        rules=(
            ImageRule("rayproject/ray", ray),
            ImageRule("redis", redis),
            ImageRule("bitnami/redis", redis),
            ImageRule("kuberay/submitter", _submitter()),
        ),
        fallback=ImageEnvironment(path_prefix=(venv_bin,)),
    )


def _submitter() -> ImageEnvironment:
    """KubeRay's light-weight submitter image: one static program at `/submitter`."""
    try:
        built: tuple[str, ...] = (str(default_build().dir_of(KUBERAY_SUBMITTER)),)
    except BuildError:  # not a checkout: only a submitter on PATH will do
        built = ()
    return ImageEnvironment(
        path_prefix=built,
        entrypoint=("/submitter",),
        image_paths=(("/submitter", KUBERAY_SUBMITTER),),
        programs=((KUBERAY_SUBMITTER, "make kuberay"),),
    )


def write_profile(environment: ImageEnvironment, home: Path) -> None:
    """Give a pod's home directory the image's profile, unless something put one there."""
    profile = home / ".profile"
    if environment.profile and not profile.exists():
        profile.write_text(environment.profile)


def path_for(environment: ImageEnvironment) -> str:
    """Return the PATH a container of this environment starts with."""
    return ":".join([*environment.path_prefix, SYSTEM_PATH])


class MissingProgram(Exception):
    """A program the image's stand-in runs is not on this machine (see `missing_program`)."""


def missing_program(environment: ImageEnvironment, image: str) -> str | None:
    """Why this machine cannot stand in for `image`: a program it lacks, and how to install it.

    A container would otherwise die with exit 127 inside its shell, and crash-loop without
    saying what to do.
    """
    path = path_for(environment)
    for program, install in environment.programs:
        if shutil.which(program, path=path) is None:
            return (
                f"{program}, which stands in for the image {image}, is not installed on this "
                f"machine; install it with `{install}`"
            )
    return None
