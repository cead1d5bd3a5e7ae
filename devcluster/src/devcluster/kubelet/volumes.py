"""Pod volumes on the host, and the mount script that shows them where containers expect them.

Each container runs in its own mount namespace, so `/tmp` (Ray keeps its session in
`/tmp/ray`), `/etc/hosts` (part B's cluster hosts file) and every `volumeMounts[].mountPath`
are what the container sees, while the host keeps its own. Volume contents live under the
pod's directory: emptyDir as a directory, configMap and secret as files (one per key, or as
`items` lists them), downwardAPI and projected volumes as files too (a real API server's
ServiceAccount admission adds a projected `kube-api-access-*` volume: a token the node minted,
the `kube-root-ca.crt` ConfigMap and the namespace), persistentVolumeClaim as a directory per
claim that outlives the pod. On devcluster's own API server, which adds no such volume, the
service-account files at /var/run/secrets/kubernetes.io/serviceaccount are a placeholder.

The script is built as text (pure) and runs as the container's first process, before its
command is exec'd. It works from the pod directory with relative paths, because bind-mounting
the private `/tmp` can hide a state directory that itself lives under /tmp.
"""

from __future__ import annotations

import base64
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from devcluster.kubelet import envs

JsonObject = dict[str, Any]
# (source kind "configMap" or "secret", name) -> key/bytes data, None when missing
SourceLookup = Callable[[str, str], Mapping[str, bytes] | None]
# a projected serviceAccountToken source -> the token minted for it, None when there is none
TokenLookup = Callable[[JsonObject], bytes | None]
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_SA_VOLUME = "kube-api-access-devcluster"


class VolumeError(Exception):
    """A volume cannot be set up (FailedMount): the pod stays ContainerCreating."""


@dataclass(frozen=True)
class Mount:
    """One bind mount: a path relative to the pod directory onto a container path."""

    source: str
    target: str
    read_only: bool = False
    is_file: bool = False


def source_data(kind: str, obj: JsonObject | None) -> dict[str, bytes] | None:
    """Return the key/bytes data of a ConfigMap or Secret object."""
    if obj is None:
        return None
    data: dict[str, bytes] = {}
    if kind == "secret":
        for key, value in (obj.get("data") or {}).items():
            data[key] = base64.b64decode(value)
        for key, value in (obj.get("stringData") or {}).items():
            data[key] = str(value).encode()
        return data
    for key, value in (obj.get("data") or {}).items():
        data[key] = str(value).encode()
    for key, value in (obj.get("binaryData") or {}).items():
        data[key] = base64.b64decode(value)
    return data


_DEFAULT_MODE = 0o644
"""A volume file's mode when neither the volume's `defaultMode` nor its item's `mode` sets one."""


def _write_files(
    directory: Path,
    files: Mapping[str, bytes],
    default_mode: int = _DEFAULT_MODE,
    modes: Mapping[str, int] | None = None,
) -> None:
    """Write the files with their modes: an item's `mode`, else the volume's `defaultMode`.

    A script in a ConfigMap is run straight from its mount only with an executable mode
    (KubeRay's TLS sample mounts its certificate scripts with `defaultMode: 0777`).
    """
    directory.mkdir(parents=True, exist_ok=True)
    for relative, content in files.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        path.chmod((modes or {}).get(relative, default_mode))


def _item_modes(spec: JsonObject) -> dict[str, int]:
    """The modes a configMap, secret or downwardAPI source's items give their files."""
    return {item["path"]: int(item["mode"]) for item in spec.get("items") or [] if "mode" in item}


def _projected_modes(volume: JsonObject) -> dict[str, int]:
    modes: dict[str, int] = {}
    for source in volume["projected"].get("sources") or []:
        for kind in ("configMap", "secret", "downwardAPI"):
            if kind in source:
                modes.update(_item_modes(source[kind]))
    return modes


def _keyed_files(volume: JsonObject, kind: str, lookup: SourceLookup) -> dict[str, bytes]:
    spec = volume[kind]
    if kind == "secret" and "name" in spec and "secretName" not in spec:
        spec = {**spec, "secretName": spec["name"]}  # a projected source names it `name`
    name = spec.get("name") or spec.get("secretName", "")
    data = lookup(kind, name)
    if data is None:
        if spec.get("optional"):
            return {}
        what = "configmap" if kind == "configMap" else "secret"
        raise VolumeError(f'{what} "{name}" not found')
    items = spec.get("items")
    if not items:
        return dict(data)
    missing = [i["key"] for i in items if i["key"] not in data]
    if missing and not spec.get("optional"):
        raise VolumeError(f"configmap references non-existent config key: {missing[0]}")
    return {i["path"]: data[i["key"]] for i in items if i["key"] in data}


def _downward_files(items: list[JsonObject], pod: JsonObject) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for item in items:
        if "fieldRef" in item:
            value = envs.field_value(pod, item["fieldRef"].get("fieldPath", ""))
        elif "resourceFieldRef" in item:
            container = {"name": item["resourceFieldRef"].get("containerName", "")}
            value = envs.resource_value(
                pod, container, item["resourceFieldRef"], os.cpu_count() or 1
            )
        else:
            raise VolumeError(f"downwardAPI item {item.get('path')!r} has no field")
        files[item["path"]] = value.encode()
    return files


_PLACEHOLDER = b"devcluster"


def _or_placeholder(token: TokenLookup) -> TokenLookup:
    return lambda spec: token(spec) or _PLACEHOLDER


def projected_files(
    volume: JsonObject, pod: JsonObject, lookup: SourceLookup, token: TokenLookup
) -> dict[str, bytes]:
    """Return the files of a projected volume: its sources' files, merged in order."""
    files: dict[str, bytes] = {}
    for source in volume["projected"].get("sources") or []:
        if "configMap" in source or "secret" in source:
            kind = "configMap" if "configMap" in source else "secret"
            files.update(_keyed_files(source, kind, lookup))
        elif "downwardAPI" in source:
            files.update(_downward_files(source["downwardAPI"].get("items") or [], pod))
        elif "serviceAccountToken" in source:
            spec = source["serviceAccountToken"]
            minted = token(spec)
            if minted is None:
                raise VolumeError(f"no service account token for {volume['name']!r}")
            files[spec.get("path", "token")] = minted
        else:
            raise VolumeError(f"volume {volume['name']!r}: unsupported projected source")
    return files


def _no_token(_source: JsonObject) -> bytes | None:
    return None


def prepare_volumes(
    pod: JsonObject,
    pod_dir: Path,
    claims_dir: Path,
    lookup: SourceLookup,
    *,
    ca_crt: bytes = b"",
    token: TokenLookup = _no_token,
    placeholder_token: bool = True,
) -> dict[str, Path]:
    """Create every volume of a pod on the host; return volume name -> host path.

    `ca_crt` is the CA of the API server's pod-facing certificate (empty when there is none).
    `token` gives the tokens of projected volumes; `placeholder_token` adds devcluster's own
    service-account files (no real API server put a projected volume there) and gives a
    projected token source devcluster's placeholder token, which its API server accepts as it
    accepts any bearer token.
    """
    if placeholder_token:
        token = _or_placeholder(token)
    paths: dict[str, Path] = {}
    for volume in pod.get("spec", {}).get("volumes") or []:
        name = volume["name"]
        path = pod_dir / "volumes" / name
        if "emptyDir" in volume:
            path.mkdir(parents=True, exist_ok=True)
        elif "configMap" in volume or "secret" in volume:
            kind = "configMap" if "configMap" in volume else "secret"
            spec = volume[kind]
            files = _keyed_files(volume, kind, lookup)
            _write_files(path, files, spec.get("defaultMode", _DEFAULT_MODE), _item_modes(spec))
        elif "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"].get("claimName", "")
            path = claims_dir / pod["metadata"].get("namespace", "") / claim
            path.mkdir(parents=True, exist_ok=True)
        elif "hostPath" in volume:
            path = Path(volume["hostPath"].get("path", "/"))
        elif "projected" in volume:
            files = projected_files(volume, pod, lookup, token)
            default = volume["projected"].get("defaultMode", _DEFAULT_MODE)
            _write_files(path, files, default, _projected_modes(volume))
        elif "downwardAPI" in volume:
            spec = volume["downwardAPI"]
            files = _downward_files(spec.get("items") or [], pod)
            _write_files(path, files, spec.get("defaultMode", _DEFAULT_MODE), _item_modes(spec))
        else:
            raise VolumeError(
                f"volume {name!r}: only emptyDir, configMap, secret, projected, downwardAPI, "
                "persistentVolumeClaim and hostPath are supported"
            )
        paths[name] = path
    if placeholder_token and pod.get("spec", {}).get("automountServiceAccountToken", True):
        namespace = pod["metadata"].get("namespace", "default")
        files = {"token": _PLACEHOLDER, "namespace": namespace.encode(), "ca.crt": ca_crt}
        _write_files(pod_dir / "volumes" / _SA_VOLUME, files)
        paths[_SA_VOLUME] = pod_dir / "volumes" / _SA_VOLUME
    return paths


def container_mounts(
    container: JsonObject, volumes: Mapping[str, Path], pod_dir: Path
) -> list[Mount]:
    """Return the bind mounts of one container, in the order they must be made."""
    mounts: list[Mount] = []
    for mount in container.get("volumeMounts") or []:
        host = volumes.get(mount.get("name", ""))
        if host is None:
            raise VolumeError(f"volume {mount.get('name')!r} is not defined in the pod")
        sub = mount.get("subPath") or ""
        source = host / sub if sub else host
        mounts.append(
            Mount(
                os.path.relpath(source, pod_dir),
                mount["mountPath"],
                bool(mount.get("readOnly")),
                bool(sub) and source.is_file(),
            )
        )
    taken = {m.target.rstrip("/") for m in mounts}
    if _SA_VOLUME in volumes and SERVICE_ACCOUNT_DIR not in taken:
        mounts.append(
            Mount(os.path.relpath(volumes[_SA_VOLUME], pod_dir), SERVICE_ACCOUNT_DIR, True)
        )
    # Parents before children, so a mount at /tmp/ray lands on the private /tmp.
    return sorted(mounts, key=lambda m: m.target.rstrip("/").count("/"))


def _kept_inside(mount: Mount, host_paths: Sequence[str]) -> list[tuple[str, str]]:
    """(host path, where inside the mount's source it goes) for each path the mount covers."""
    target = PurePosixPath(mount.target)
    kept = []
    for path in host_paths:
        if target != PurePosixPath("/") and PurePosixPath(path).is_relative_to(target):
            kept.append((path, f"{mount.source}/{PurePosixPath(path).relative_to(target)}"))
    return kept


def resolv_conf(namespace: str, nameservers: Sequence[str] = ()) -> str:
    """Return a pod's /etc/resolv.conf: cluster search domains and the host's nameservers.

    Cluster names resolve from the cluster hosts file first. Without egress (`nameservers`
    empty) a nameserver on the pod's own loopback fails at once, where an unreachable one
    would time out.
    """
    search = f"{namespace}.svc.cluster.local svc.cluster.local cluster.local"
    servers = "".join(f"nameserver {s}\n" for s in nameservers) or "nameserver 127.0.0.1\n"
    return f"search {search}\n{servers}options ndots:5 timeout:1 attempts:1\n"


def mount_script(
    pod_dir: Path,
    tmp_dir: str,
    mounts: list[Mount],
    hosts_file: str,
    hostname: str,
    workdir: str,
    host_paths: Sequence[str] = (),
) -> str:
    """Return the shell that sets up a container's view, then execs its command ("$@").

    `host_paths` are host directories the container's programs live in (the venv behind a
    `rayproject/ray` image, the folder of KubeRay's built submitter). A mount that would hide
    one (the private /tmp of a checkout cloned under /tmp, as CI may do; the per-pod home over
    a build cache under /root) gets it bound inside at the same path.
    """
    q = shlex.quote
    lines = ["set -e", f"cd {q(str(pod_dir))}"]
    for mount in [Mount(tmp_dir, "/tmp"), *mounts]:
        target = q(mount.target)
        if mount.is_file:
            lines.append(f"[ -e {target} ] || {{ mkdir -p $(dirname {target}); : > {target}; }}")
        else:
            lines.append(f"mkdir -p {target}")
        kept = [] if mount.is_file else _kept_inside(mount, host_paths)
        for path, inside in kept:
            lines.append(f"mkdir -p {q(inside)}")
            lines.append(f"mount --bind {q(path)} {q(inside)}")
        # Recursive when host paths were bound inside the source, so they come along.
        options = "rbind" if kept else "bind"
        options += ",ro" if mount.read_only else ""
        lines.append(f"mount -o {options} {q(mount.source)} {target}")
    lines.append(f"mount -o bind,ro {q(hosts_file)} /etc/hosts")
    lines.append("mount -o bind,ro resolv.conf /etc/resolv.conf")
    lines.append(f"hostname {q(hostname)}")
    lines.append(f"mkdir -p {q(workdir)} && cd {q(workdir)}")
    lines.append('exec "$@"')
    return "\n".join(lines)
