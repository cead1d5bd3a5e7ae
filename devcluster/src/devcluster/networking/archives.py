"""GitHub's archive zips that KubeRay's samples use as `working_dir`, served to pods at their URLs.

KubeRay's Serve samples and tests give their apps a `working_dir` such as
`https://github.com/ray-project/test_dag/archive/<sha>.zip`. A node with internet access
fetches it from GitHub; devcluster's node may have none (CI has none), but KubeRay's reference
data beside the checkout (`shared/kuberay/archives/`, or `$KUBERAY_SHARED_DIR/kuberay/archives/`)
holds those archives, listed in its `SHA256SUMS` and named `<repo>-<ref>.zip`. So the node
answers for GitHub, for those files only:

* `github.com` and `codeload.github.com` resolve to the node's address in the pods' hosts
  files (`hosts_file`'s `node_names`), and the process kubelet redirects a pod's connections
  to that address's port 443 to where `ArchiveServer` listens (`network.https_redirect`), so
  two nodes on one machine never contend for port 443;
* the server answers as GitHub does: `github.com/ray-project/<repo>/archive/<ref>.zip` is a
  302 to `codeload.github.com/ray-project/<repo>/zip/<ref>`, which is the zip; every other
  path of either host is a 404, and nothing else on the internet becomes reachable;
* its certificate for both names is signed by a CA made once per state directory, which pods
  trust as an image trusts the public CAs: the kubelet mounts the system CA bundle plus that CA
  over the system bundle's path in each container and names it in `SSL_CERT_FILE` and
  `REQUESTS_CA_BUNDLE` (Ray downloads a `working_dir` with smart_open, that is `requests`,
  which reads certifi's bundle unless told otherwise). The machine's own trust store is left
  alone.

`archive_for`, `parse_sums` and `issue_certificates` are pure or local and tested directly.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import re
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from devcluster.control_plane.pki import certificate_builder

log = logging.getLogger(__name__)

SHARED_VARIABLE = "KUBERAY_SHARED_DIR"
"""The folder of KubeRay's reference data when it is not `shared/` beside the checkout."""
OWNER = "ray-project"
GITHUB, CODELOAD = "github.com", "codeload.github.com"
_COMMIT = re.compile(r"[0-9a-f]{40}")
_NAME = re.compile(r"([A-Za-z0-9_.]+)-([A-Za-z0-9_.]+)\.zip")  # `-` parts repo from ref


def default_archives_dir() -> Path:
    """`$KUBERAY_SHARED_DIR/kuberay/archives/`, else `shared/kuberay/archives/` by the checkout."""
    explicit = os.environ.get(SHARED_VARIABLE)
    if explicit:
        return Path(explicit) / "kuberay" / "archives"
    checkout = Path(__file__).resolve().parents[4]
    return checkout.parent / "shared" / "kuberay" / "archives"


@dataclass(frozen=True)
class Archive:
    """One repository archive: where GitHub serves it and the local file that stands for it."""

    repo: str
    ref: str
    """A commit, or `refs/heads/<branch>` for a branch's head."""
    file: Path
    sha256: str

    @property
    def url(self) -> str:
        """The URL samples name as `working_dir`."""
        return f"https://{GITHUB}{self.github_path}"

    @property
    def github_path(self) -> str:
        """The path on github.com, which redirects to codeload."""
        return f"/{OWNER}/{self.repo}/archive/{self.ref}.zip"

    @property
    def codeload_path(self) -> str:
        """The path on codeload.github.com that answers with the zip."""
        return f"/{OWNER}/{self.repo}/zip/{self.ref}"


def archive_for(file_name: str, sha256: str, directory: Path) -> Archive | None:
    """Return the archive a file of the folder stands for, None if its name says none.

    `<repo>-<commit>.zip` is the archive of a commit, `<repo>-<branch>.zip` that of a branch's
    head (`archive/refs/heads/<branch>.zip`), as the folder's README maps them. Repository
    names of `ray-project` here have no `-`; the README abbreviates some commits, so the file
    names, not the README, are the mapping.
    """
    found = _NAME.fullmatch(file_name)
    if found is None:
        return None
    repo, ref = found[1], found[2]
    if not _COMMIT.fullmatch(ref):
        ref = f"refs/heads/{ref}"
    return Archive(repo, ref, directory / file_name, sha256.lower())


def parse_sums(text: str, directory: Path) -> list[Archive]:
    """Return the archives a `SHA256SUMS` file lists (`<sha256>  <file>` per line)."""
    archives = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 2 or not re.fullmatch(r"[0-9a-fA-F]{64}", fields[0]):
            continue
        archive = archive_for(fields[1].lstrip("*"), fields[0], directory)
        if archive is not None:
            archives.append(archive)
    return archives


def load_archives(directory: Path) -> list[Archive]:
    """The folder's archives whose files are there with their listed digest.

    A file that is missing or differs (a truncated copy) is left out and logged: serving it
    would fail in a pod far from the cause.
    """
    sums = directory / "SHA256SUMS"
    if not sums.is_file():
        return []
    good = []
    for archive in parse_sums(sums.read_text(), directory):
        try:
            digest = hashlib.sha256(archive.file.read_bytes()).hexdigest()
        except OSError as err:
            log.warning("archive %s not served: %s", archive.url, err)
            continue
        if digest != archive.sha256:
            log.warning(
                "archive %s not served: %s differs from SHA256SUMS", archive.url, archive.file
            )
            continue
        good.append(archive)
    return good


@dataclass(frozen=True)
class Certificates:
    """The node's archive CA and the serving certificate it signed for GitHub's names."""

    ca: Path
    cert: Path
    key: Path


def issue_certificates(directory: Path, names: Sequence[str] = (GITHUB, CODELOAD)) -> Certificates:
    """Return the CA and serving certificate under `directory`, made on first use only.

    A CA of its own rather than the control plane's: pods trust it for public names, which the
    cluster's CA must never vouch for. The leaf carries the key identifiers strict verifiers
    (Python 3.13's default context) require.
    """
    found = Certificates(directory / "ca.crt", directory / "server.crt", directory / "server.key")
    if found.ca.exists() and found.cert.exists() and found.key.exists():
        return found
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "devcluster archives CA")])
    ca_cert = (
        certificate_builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    cert = (
        certificate_builder(subject, ca_name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    found.key.touch(mode=0o600)
    found.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    found.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    # The CA's key signs nothing more: it is not kept, so nothing else can ever be vouched for.
    found.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    return found


def _key_usage(ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def system_bundle() -> Path | None:
    """The machine's CA bundle, the file OpenSSL verifies with by default, if there is one."""
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.openssl_cafile, paths.cafile):
        if candidate and Path(candidate).is_file():
            return Path(candidate).resolve()
    return None


def write_bundle(system: Path, ca: Path, out: Path) -> Path:
    """Write `system`'s CAs followed by the node's CA to `out`.

    Remade at each start: the system's bundle may have been updated since.
    """
    public = system.read_bytes()
    if not public.endswith(b"\n"):
        public += b"\n"
    out.write_bytes(public + ca.read_bytes())
    return out


@dataclass(frozen=True)
class ServedArchives:
    """What the process kubelet gives each pod so that it fetches the archives as from GitHub."""

    address: str
    """The node address `github.com` resolves to; pods reach port 443 there."""
    port: int
    """Where on `address` the server really listens; pods' port 443 is redirected to it."""
    bundle: Path
    """The system's CAs plus the archive CA, on the node."""
    trust_store: str
    """The path in a container the bundle is mounted over: the system bundle's own."""

    def env(self) -> dict[str, str]:
        """The variables that make clients with a bundle of their own (requests) use it."""
        return {"SSL_CERT_FILE": self.trust_store, "REQUESTS_CA_BUNDLE": self.trust_store}

    def node_names(self) -> dict[str, list[str]]:
        """The hosts-file names the node answers to for GitHub."""
        return {self.address: [GITHUB, CODELOAD]}


def archives_app(archives: Sequence[Archive]) -> web.Application:
    """GitHub's answers for these archives, and a 404 for every other request."""
    by_github = {a.github_path: a for a in archives}
    by_codeload = {a.codeload_path: a for a in archives}

    async def answer(request: web.Request) -> web.StreamResponse:
        host = request.host.rsplit(":", 1)[0].lower() if request.host else ""
        if request.method in ("GET", "HEAD"):
            if host == GITHUB and (archive := by_github.get(request.path)):
                raise web.HTTPFound(f"https://{CODELOAD}{archive.codeload_path}")
            if host == CODELOAD and (archive := by_codeload.get(request.path)):
                disposition = f"attachment; filename={archive.file.name}"
                return web.FileResponse(
                    archive.file,
                    headers={"Content-Type": "application/zip", "Content-Disposition": disposition},
                )
        raise web.HTTPNotFound(text="Not Found")

    app = web.Application()
    app.router.add_route("*", "/{path:.*}", answer)
    return app


class ArchiveServer:
    """The node's stand-in for GitHub's archive downloads (see the module docstring)."""

    def __init__(self, archives_dir: Path, state_dir: Path) -> None:
        self.archives_dir = archives_dir
        self.dir = state_dir  # the CA, the serving certificate and the pods' bundle
        self.served: ServedArchives | None = None
        self._runner: web.AppRunner | None = None

    def __repr__(self) -> str:
        return f"ArchiveServer({self.archives_dir})"

    def node_names(self) -> Mapping[str, Sequence[str]]:
        """What the hosts files add while the archives are served: nothing before or after."""
        return self.served.node_names() if self.served is not None else {}

    async def start(self, address: str) -> ServedArchives | None:
        """Serve on `address` at a free port; None when there is nothing to serve here.

        A failure is logged, not raised: without the archives the node runs on, as before.
        """
        try:
            return await self._start(address)
        except (OSError, ssl.SSLError) as err:
            log.warning("archives not served: %s", err)
            return None

    async def _start(self, address: str) -> ServedArchives | None:
        archives = await asyncio.to_thread(load_archives, self.archives_dir)
        if not archives:
            log.info("no archives under %s: github.com stays unreachable", self.archives_dir)
            return None
        system = system_bundle()
        if system is None:
            log.warning("no system CA bundle to add the archive CA to: archives not served")
            return None
        certificates = await asyncio.to_thread(issue_certificates, self.dir)
        bundle = await asyncio.to_thread(
            write_bundle, system, certificates.ca, self.dir / "ca-bundle.pem"
        )
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(certificates.cert, certificates.key)
        runner = web.AppRunner(archives_app(archives), access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, address, 0, ssl_context=tls)
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            raise
        self._runner = runner
        port = int(runner.addresses[0][1])
        self.served = ServedArchives(address, port, bundle, str(system))
        log.info("serving %d GitHub archives to pods on %s:%d", len(archives), address, port)
        return self.served

    async def stop(self) -> None:
        """Stop serving."""
        self.served = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
