"""Image layers, written reproducibly without a container engine, and images, made by crane.

A layer is a directory tree written as a gzipped tar with every timestamp,
owner name and ordering fixed, so the same files always give the same digest
(crane has no command that writes a layer from a directory tree). The runtime
image is assembled from those layers by go-containerregistry's ``crane`` (the
version tools/crane/go.mod pins): ``crane append`` onto its empty base keeps
each layer's bytes and digest, and sets no time (every ``created`` is the zero
time), ``crane mutate`` sets the config of package/image.json, and the result
is a ``docker save`` tarball, as ``crossplane xpkg build
--embed-runtime-image-tarball`` and ``docker load`` read it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tarfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

GZIP_LEVEL = 6


@dataclass(frozen=True)
class Layer:
    path: Path  # the gzipped tar
    digest: str  # sha256:… of the gzipped bytes
    diff_id: str  # sha256:… of the tar
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "diff_id": self.diff_id, "size": self.size}

    @classmethod
    def from_json(cls, path: Path, data: Mapping[str, Any]) -> Layer:
        return cls(path, str(data["digest"]), str(data["diff_id"]), int(data["size"]))


class _Hashing(io.RawIOBase):
    """A write-only stream that hashes and counts what passes through it."""

    def __init__(self, sink: IO[bytes] | None) -> None:
        self.sink = sink
        self.sha = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self.sha.update(view)
        self.size += len(view)
        if self.sink is not None:
            self.sink.write(view)
        return len(view)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _entries(root: Path, prefix: str = "") -> Iterator[tuple[str, Path]]:
    """Every path under root, parents first, siblings in byte order of their names."""
    for child in sorted(root.iterdir(), key=lambda p: p.name.encode()):
        name = f"{prefix}{child.name}"
        yield name, child
        if child.is_dir() and not child.is_symlink():
            yield from _entries(child, f"{name}/")


def _tarinfo(name: str, path: Path) -> tarfile.TarInfo:
    st = path.lstat()
    info = tarfile.TarInfo(name)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    info.mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        info.type = tarfile.SYMTYPE
        info.linkname = os.readlink(path)
        info.mode = 0o777
    elif stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
    elif stat.S_ISREG(st.st_mode):
        info.size = st.st_size
    else:
        raise ValueError(f"{path}: only files, directories and symlinks belong in a layer")
    return info


def write_layer(root: Path, dest: Path) -> Layer:
    """Write root's tree as a reproducible gzipped layer at dest."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f".{dest.name}.{os.getpid()}")
    with partial.open("wb") as raw:
        compressed = _Hashing(raw)
        with gzip.GzipFile(
            filename="", mode="wb", fileobj=compressed, compresslevel=GZIP_LEVEL, mtime=0
        ) as gz:
            plain = _Hashing(gz)  # type: ignore[arg-type]
            with tarfile.open(fileobj=plain, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                for name, path in _entries(root):
                    info = _tarinfo(name, path)
                    if info.isreg():
                        with path.open("rb") as f:
                            tar.addfile(info, f)
                    else:
                        tar.addfile(info)
    partial.replace(dest)
    return Layer(
        dest, f"sha256:{compressed.sha.hexdigest()}", f"sha256:{plain.sha.hexdigest()}",
        compressed.size,
    )  # fmt: skip


@dataclass(frozen=True)
class ImageSpec:
    """A runtime image: our layers (base first) and what crane mutate sets on them."""

    layers: tuple[Layer, ...]
    architecture: str
    entrypoint: tuple[str, ...]
    user: str
    env: tuple[str, ...]
    workdir: str
    ports: tuple[str, ...]  # "9443/tcp"
    labels: tuple[tuple[str, str], ...]

    def key(self) -> str:
        """A hash of everything the image is made of; the same key gives the same image."""
        spec = {**asdict(self), "layers": [layer.to_json() for layer in self.layers]}
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


class Crane:
    """go-containerregistry's crane, with its own registry on loopback for the one build.

    ``crane mutate`` (which sets the config) reads its input only from a registry
    (cmd/crane/cmd/mutate.go: crane.Pull, which is remote.Image), so the layers
    are first appended onto crane's empty base and pushed into ``crane registry
    serve``: in memory, on 127.0.0.1, started on first use and stopped on exit.
    ``mutate -o`` then writes the image as a ``docker save`` tarball, the format
    ``crossplane xpkg build --embed-runtime-image-tarball`` reads with the same
    library (tarball.ImageFromPath). Nothing but the loopback address is dialled.
    """

    def __init__(self, binary: Path, work: Path) -> None:
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            raise SystemExit(f"crane is missing at {binary}: run `make packages`")
        self.binary, self.work = binary, work
        # No user's docker config (headers, credential helpers) comes into the build.
        (work / "docker").mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "DOCKER_CONFIG": str(work / "docker")}
        self._server: subprocess.Popen[bytes] | None = None
        self._host = ""
        self._bases: dict[tuple[str, ...], str] = {}

    def __enter__(self) -> Crane:
        return self

    def __exit__(self, *_: object) -> None:
        if self._server is not None:
            self._server.send_signal(signal.SIGINT)  # serve shuts down on interrupt
            try:
                self._server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait()

    def run(self, *args: str) -> str:
        proc = subprocess.run(
            [str(self.binary), *args], env=self.env, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise SystemExit(f"crane {args[0]} failed:\n{proc.stderr}")
        return proc.stdout.strip()

    def registry(self) -> str:
        """host:port of crane's in-memory registry, started on first use."""
        if self._server is None:
            log = self.work / "registry.log"
            with log.open("wb") as out:
                self._server = subprocess.Popen(
                    [str(self.binary), "registry", "serve", "--address", "127.0.0.1:0"],
                    env=self.env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                )  # fmt: skip
            deadline = time.monotonic() + 30
            while not self._host:
                found = re.search(rb"serving on port (\d+)", log.read_bytes())
                if found:
                    self._host = f"127.0.0.1:{found[1].decode()}"
                elif self._server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"crane registry serve did not start:\n{log.read_text()}")
                else:
                    time.sleep(0.05)
        return self._host

    def base(self, layers: Sequence[Layer]) -> str:
        """The layers appended onto the empty OCI base, by digest in the registry."""
        key = tuple(layer.digest for layer in layers)
        if key not in self._bases:
            files = [arg for layer in layers for arg in ("-f", str(layer.path))]
            self._bases[key] = self.run(
                "append", "--oci-empty-base", *files,
                "-t", f"{self.registry()}/fleetgate/layers:build",
            )  # fmt: skip
        return self._bases[key]

    def write_image(self, spec: ImageSpec, dest: Path, ref: str) -> str:
        """Write spec as a tarball tagged ref; its digest as crossplane xpkg build reads it."""
        if any("," in arg for arg in spec.entrypoint):
            raise ValueError("crane takes --entrypoint as a comma-separated list")
        args = [
            "mutate", self.base(spec.layers),
            "--set-platform", f"linux/{spec.architecture}",
            *(f"--entrypoint={arg}" for arg in spec.entrypoint),
            "--user", spec.user,
            *(arg for env in spec.env for arg in ("--env", env)),
            "--workdir", spec.workdir,
            *(arg for port in spec.ports for arg in ("--exposed-ports", port)),
            *(arg for k, v in spec.labels for arg in ("--label", f"{k}={v}")),
            "--tag", ref, "--output", str(dest),
        ]  # fmt: skip
        self.run(*args)
        return self.run("digest", "--tarball", str(dest))

    def export(self, archive: Path) -> subprocess.Popen[bytes]:
        """``crane export - -``: the image in archive flattened to one tar, on stdout."""
        with archive.open("rb") as f:
            return subprocess.Popen(
                [str(self.binary), "export", "-", "-"], env=self.env, stdin=f,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )  # fmt: skip


def unpack_layers(layers: Iterable[Path], root: Path) -> None:
    """Apply our own gzipped layers, base first, onto root, as a container runtime would."""
    for path in layers:
        with tarfile.open(path, mode="r:gz") as layer:
            for member in layer:
                _apply(layer, member, root)


def unpack_export(crane: Crane, archive: Path, root: Path) -> None:
    """The filesystem of the image in archive (a tarball, e.g. an .xpkg), flattened by crane."""
    proc = crane.export(archive)
    assert proc.stdout is not None
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as flat:
            for member in flat:
                _apply(flat, member, root)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"crane export {archive} failed:\n{err.decode()}")


def _apply(layer: tarfile.TarFile, member: tarfile.TarInfo, root: Path) -> None:
    """Extract one layer member, honouring whiteouts; never write outside root."""
    name = member.name.lstrip("./")
    if not name or os.path.isabs(member.name) or ".." in Path(name).parts:
        raise ValueError(f"unsafe path in layer: {member.name!r}")
    parent = (root / name).parent.resolve()
    if not parent.is_relative_to(root.resolve()):
        raise ValueError(f"{member.name!r} would land outside the root filesystem")
    base = os.path.basename(name)
    if base.startswith(".wh."):
        gone = parent / base.removeprefix(".wh.")
        if gone.is_dir() and not gone.is_symlink():
            shutil.rmtree(gone)
        elif gone.exists() or gone.is_symlink():
            gone.unlink()
        return
    # Our own layers only (checked above): modes such as /tmp's sticky bit must survive.
    layer.extract(member, root, filter="fully_trusted")
