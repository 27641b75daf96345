"""OCI image layers and image archives, written reproducibly without a container engine.

A layer is a directory tree written as a tar with every timestamp, owner name
and ordering fixed, so the same files always give the same digest. An image
archive is one tar that is at once an OCI image layout (``oci-layout``,
``index.json``, ``blobs/sha256/…``) and a ``docker save`` archive
(``manifest.json``): ``docker load``, ``skopeo copy oci-archive:…`` and
``crossplane xpkg build --embed-runtime-image-tarball`` all read it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
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


def _blob(data: bytes) -> tuple[str, bytes]:
    return f"sha256:{hashlib.sha256(data).hexdigest()}", data


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    tar.addfile(info, io.BytesIO(data))


@dataclass(frozen=True)
class Image:
    """An image's config and manifest, as bytes with their digests, and its layers."""

    architecture: str
    layers: tuple[Layer, ...]
    config: bytes
    config_digest: str
    manifest: bytes
    digest: str  # of the manifest: what a registry calls the image


def image(
    layers: Sequence[Layer],
    config: Mapping[str, Any],
    *,
    architecture: str,
    labels: Mapping[str, str] | None = None,
) -> Image:
    image_config = {
        "architecture": architecture,
        "os": "linux",
        "config": {**config, "Labels": dict(labels or {})},
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
        "history": [
            {"created_by": f"fleetgate package/build.py layer {i}"} for i in range(len(layers))
        ],
    }
    config_digest, config_bytes = _blob(_canonical(image_config))
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": {"mediaType": CONFIG, "digest": config_digest, "size": len(config_bytes)},
        "layers": [
            {"mediaType": LAYER, "digest": layer.digest, "size": layer.size} for layer in layers
        ],
    }
    manifest_digest, manifest_bytes = _blob(_canonical(manifest))
    return Image(
        architecture, tuple(layers), config_bytes, config_digest, manifest_bytes, manifest_digest
    )


def write_image(dest: Path, img: Image, ref: str) -> None:
    """Write an image archive: an OCI image layout that is also a `docker save` archive."""
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": MANIFEST,
                "digest": img.digest,
                "size": len(img.manifest),
                "annotations": {
                    "io.containerd.image.name": ref,
                    "org.opencontainers.image.ref.name": ref.rpartition(":")[2],
                },
                "platform": {"architecture": img.architecture, "os": "linux"},
            }
        ],
    }
    docker = [
        {
            "Config": _blob_path(img.config_digest),
            "RepoTags": [ref],
            "Layers": [_blob_path(layer.digest) for layer in img.layers],
        }
    ]
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f".{dest.name}.{os.getpid()}")
    with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
        _add_bytes(tar, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        _add_bytes(tar, "index.json", _canonical(index))
        _add_bytes(tar, "manifest.json", _canonical(docker))
        _add_bytes(tar, _blob_path(img.config_digest), img.config)
        _add_bytes(tar, _blob_path(img.digest), img.manifest)
        for layer in img.layers:
            info = tarfile.TarInfo(_blob_path(layer.digest))
            info.size, info.mode, info.mtime = layer.size, 0o644, 0
            with layer.path.open("rb") as f:
                tar.addfile(info, f)
    partial.replace(dest)


def _blob_path(digest: str) -> str:
    return "blobs/sha256/" + digest.removeprefix("sha256:")


@dataclass(frozen=True)
class Archive:
    """An image read back from a docker-save style archive (an image archive or an .xpkg)."""

    config: dict[str, Any]
    layers: list[str]  # member names, base first


def read_archive(path: Path) -> Archive:
    with tarfile.open(path) as tar:
        manifest = json.loads(_member(tar, "manifest.json"))
        if len(manifest) != 1:
            raise ValueError(f"{path}: expected one image, found {len(manifest)}")
        config = json.loads(_member(tar, manifest[0]["Config"]))
        return Archive(config, list(manifest[0]["Layers"]))


def _member(tar: tarfile.TarFile, name: str) -> bytes:
    f = tar.extractfile(name)
    if f is None:
        raise ValueError(f"{name} is not a file")
    return f.read()


def unpack_archive(path: Path, root: Path) -> Archive:
    """Apply every layer of the image in path onto root, as a container runtime would."""
    image = read_archive(path)
    with tarfile.open(path) as outer:
        for name in image.layers:
            blob = outer.extractfile(name)
            if blob is None:
                raise ValueError(f"{path}: layer {name} missing")
            with tarfile.open(fileobj=blob, mode="r|*") as layer:
                for member in layer:
                    _apply(layer, member, root)
    return image


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
