"""Build every Fleetgate package: ``python -m package.build`` (``make packages``).

Without a container engine or a registry of yours (crane's own, in memory on
loopback, for the one build):

1. three image layers, each cached under ``.cache/package/layers`` by a hash of
   its inputs: Debian bookworm's Python (``package/debian.py``), the locked
   runtime wheels (``uv.lock``), and the fleetgate wheel built from this
   checkout;
2. one runtime image per function (the same layers; the entrypoint is the
   function's console script), assembled by the pinned ``crane``
   (``package/oci.py``) as the tarball the Crossplane CLI embeds;
3. with the pinned Crossplane CLI, one ``.xpkg`` per function with its runtime
   image embedded, and the Configuration package (XRDs, Compositions and
   ``dependsOn``), into ``dist/package``, plus ``packages.json`` (sizes, digests).

``python -m package.build lock`` derives ``nix/wheels.json`` from ``uv.lock``
(``make package-lock`` runs it after ``uv lock``); ``python -m package.build
rootfs DEST`` unpacks the runtime root filesystem into DEST (the Dockerfile
uses it).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import gzip
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from package import debian, oci, wheels

REPO = Path(__file__).resolve().parent.parent
HERE = REPO / "package"
CACHE = REPO / ".cache" / "package"
DIST = REPO / "dist" / "package"
CLI = REPO / ".cache" / "bin" / "crossplane"
CRANE_GO_MOD = REPO / "tools" / "crane" / "go.mod"

# The image contract nix/image.nix reads too (and the Dockerfile is checked against).
CONTRACT: dict[str, Any] = json.loads((HERE / "image.json").read_text())
FUNCTIONS: tuple[str, ...] = tuple(CONTRACT["functions"])
PORT: int = CONTRACT["port"]  # where Crossplane's function runtime dials every function
USER: str = CONTRACT["user"]
# Everything but /tmp is read-only to the function: it never writes byte code.
ENV: tuple[str, ...] = tuple(CONTRACT["env"])
CONFIGURATION = "fleetgate"
REGISTRY = "xpkg.crossplane.io/fleetgate"  # where the packages are pushed by default


def crane_binary() -> Path:
    """Where the Makefile builds crane: keyed by the version tools/crane/go.mod pins."""
    found = re.search(r"github\.com/google/go-containerregistry (v\S+)", CRANE_GO_MOD.read_text())
    if found is None:
        raise SystemExit(f"{CRANE_GO_MOD} pins no go-containerregistry")
    return REPO / ".cache" / "bin" / f"crane-{found[1]}" / "crane"


def project_version() -> str:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    return f"v{data['project']['version']}"


def native_arch() -> str:
    machine = platform.machine()
    arch = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    if arch is None:
        raise SystemExit(f"no image architecture for this machine ({machine})")
    return arch


def package_object_name(reference: str) -> str:
    """The name Crossplane gives the package object it installs for a dependency.

    Crossplane names it after the repository part of the package reference
    (registry host dropped): lower-case letters and digits are kept, '.', '/',
    ':' and '-' become '-' except at either end, at most 63 characters.
    ``xpkg.crossplane.io/fleetgate/compose-model-endpoint`` gives
    ``fleetgate-compose-model-endpoint``.
    """
    repository = reference.split("/", 1)[1] if "/" in reference else reference
    out = []
    for i, ch in enumerate(repository[:63]):
        if ch.isascii() and (ch.islower() or ch.isdigit()):
            out.append(ch)
        elif ch in "./:-" and i not in (0, 62, len(repository) - 1):
            out.append("-")
    return "".join(out).strip("-")


# --- caching ---------------------------------------------------------------


def tree_files(root: Path, patterns: Iterable[str] = ("**/*",)) -> list[Path]:
    skip = ("__pycache__", ".egg-info", ".pyc", ".mypy_cache", ".pytest_cache")
    found = {p for pattern in patterns for p in root.glob(pattern) if p.is_file()}
    return sorted(p for p in found if not any(s in str(p) for s in skip))


def digest(*parts: str | bytes | Path) -> str:
    """A hash of strings, bytes and files (by name and content)."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            h.update(str(part.relative_to(REPO) if part.is_relative_to(REPO) else part).encode())
            h.update(part.read_bytes())
        else:
            h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()


@contextlib.contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    """One build at a time per cache: test runs may start the build concurrently."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes
        yield


def cached_layer(
    name: str, key: str, make: Callable[[Path], dict[str, Any]], log: Callable[[str], None]
) -> tuple[oci.Layer, dict[str, Any]]:
    """The layer for key from the cache, or made by make(staging root) and cached."""
    path = CACHE / "layers" / f"{name}-{key[:20]}.tar.gz"
    sidecar = path.with_name(path.name + ".json")
    if path.is_file() and sidecar.is_file():
        data = json.loads(sidecar.read_text())
        return oci.Layer.from_json(path, data["layer"]), data["facts"]
    log(f"building layer {name}")
    with tempfile.TemporaryDirectory(prefix=f"fleetgate-{name}-", dir=CACHE) as work:
        root = Path(work) / "root"
        root.mkdir()
        facts = make(root)
        layer = oci.write_layer(root, path)
    sidecar.write_text(json.dumps({"layer": layer.to_json(), "facts": facts}, indent=1))
    for stale in path.parent.glob(f"{name}-*"):  # layers of inputs that have since changed
        if stale not in (path, sidecar):
            stale.unlink(missing_ok=True)
    return layer, facts


# --- the three layers ------------------------------------------------------


def python_minor() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def debian_layer(
    arch: str, log: Callable[[str], None], *, refresh: bool = False
) -> tuple[oci.Layer, dict[str, Any]]:
    key = digest(HERE / "debian.py", HERE / "elf.py", arch, python_minor())

    def make(root: Path) -> dict[str, Any]:
        apt = debian.Apt(CACHE / "apt", arch)
        apt.update()
        debs = apt.show(debian.PACKAGES)
        debian.check_closure(debs)
        files = apt.download(debs.values(), CACHE / "debs" / arch)
        for path in files:
            debian.unpack(path, root)
        debian.finish(root, files)
        wheels.byte_compile(root, f"usr/lib/python{debian.PYTHON}")
        provided = debian.sonames(root, arch)
        debian.check_links(root, provided)
        return {
            "packages": {d.name: d.version for d in sorted(debs.values(), key=lambda d: d.name)},
            "sonames": sorted(provided),
        }

    if refresh:
        for old in (CACHE / "layers").glob(f"debian-{arch}-{key[:20]}*"):
            old.unlink()
    return cached_layer(f"debian-{arch}", key, make, log)


def wheels_layer(
    arch: str, provided: Iterable[str], log: Callable[[str], None]
) -> tuple[oci.Layer, dict[str, Any]]:
    locked = wheels.image_wheels(wheels.read_lock(), arch)
    key = digest(json.dumps(locked, sort_keys=True), HERE / "wheels.py",
                 HERE / "elf.py", arch, python_minor())  # fmt: skip

    def make(root: Path) -> dict[str, Any]:
        files = wheels.download(locked, arch, CACHE / "wheels" / arch)
        wheels.install_wheels(files, root)
        wheels.byte_compile(root, wheels.SITE)
        debian.check_links(root, set(provided))
        return {"wheels": [f.name for f in files]}

    return cached_layer(f"wheels-{arch}", key, make, log)


def project_sources() -> list[Path]:
    return [REPO / "pyproject.toml", REPO / "README.md", *tree_files(REPO / "functions")]


def project_layer(log: Callable[[str], None]) -> tuple[oci.Layer, dict[str, Any]]:
    sources = project_sources()
    key = digest(*sources, HERE / "wheels.py", python_minor())

    def make(root: Path) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="fleetgate-src-", dir=CACHE) as work:
            src = Path(work) / "src"
            for path in sources:  # a clean copy: no egg-info or caches of the checkout
                target = src / path.relative_to(REPO)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
            wheel = wheels.build_wheel(src, Path(work) / "wheel")
            wheels.install_wheels([wheel], root)
        wheels.byte_compile(root, wheels.SITE)
        site = root / wheels.SITE
        scripts = {}
        for function in FUNCTIONS:
            module = function.removeprefix("compose-").replace("-", "_")
            scripts[function] = (site / "fleetgate" / module / "main.py").is_file()
        return {"wheel": wheel.name, "startable": scripts}

    return cached_layer("fleetgate", key, make, log)


# --- images and packages -----------------------------------------------------


def image_config(function: str) -> dict[str, Any]:
    return {
        "Entrypoint": [f"{CONTRACT['bin']}/{function}"],
        "User": USER,
        "Env": list(ENV),
        "WorkingDir": "/",
        "ExposedPorts": {f"{PORT}/tcp": {}},
    }


def function_image(
    function: str, arch: str, layers: list[oci.Layer], version: str
) -> oci.ImageSpec:
    """What crane makes of the layers for function: image_config and the labels."""
    config = image_config(function)
    labels = {
        "org.opencontainers.image.title": function,
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.description": "Fleetgate composition function",
    }
    return oci.ImageSpec(
        layers=tuple(layers),
        architecture=arch,
        entrypoint=tuple(config["Entrypoint"]),
        user=config["User"],
        env=tuple(config["Env"]),
        workdir=config["WorkingDir"],
        ports=tuple(config["ExposedPorts"]),
        labels=tuple(labels.items()),
    )


def _dump_all(path: Path, docs: Iterable[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))


def stage_function(function: str) -> Path:
    """The function's package root: its crossplane.yaml and any Composition input CRDs."""
    stage = CACHE / "stage" / function
    shutil.rmtree(stage, ignore_errors=True)
    source = HERE / "functions" / function
    stage.mkdir(parents=True)
    shutil.copy2(source / "crossplane.yaml", stage / "crossplane.yaml")
    for crd in sorted((source / "input").glob("*.yaml")):
        (stage / "input").mkdir(exist_ok=True)
        shutil.copy2(crd, stage / "input" / crd.name)
    return stage


def function_references(registry: str) -> dict[str, str]:
    """Composition functionRef name (as in compositions/) -> the packaged Function's name."""
    return {f: package_object_name(f"{registry}/{f}") for f in FUNCTIONS}


def stage_configuration(registry: str, version: str) -> Path:
    """The Configuration's package root: metadata, XRDs, Compositions pointing at packaged
    names; it depends on the functions of its own ``version``, the one being built."""
    stage = CACHE / "stage" / CONFIGURATION
    shutil.rmtree(stage, ignore_errors=True)
    meta = yaml.safe_load((HERE / "configuration" / "crossplane.yaml").read_text())
    for dep in meta["spec"]["dependsOn"]:
        if dep.get("kind") == "Function":
            dep["package"] = f"{registry}/{dep['package'].rsplit('/', 1)[1]}"
            dep["version"] = version
    _dump_all(stage / "crossplane.yaml", [meta])
    for xrd in sorted((REPO / "apis").glob("*/definition.yaml")):
        shutil.copy2(xrd, _mkparent(stage / "apis" / xrd.parent.name / xrd.name))
    names = function_references(registry)
    for path in sorted((REPO / "compositions").glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        for doc in docs:
            for step in doc.get("spec", {}).get("pipeline", []):
                ref = step.get("functionRef", {})
                ref["name"] = names.get(ref.get("name"), ref.get("name"))
        _dump_all(stage / "compositions" / path.name, docs)
    return stage


def _mkparent(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def xpkg_build(
    stage: Path,
    out: Path,
    image: tuple[oci.ImageSpec, str] | None = None,
    crane: oci.Crane | None = None,
) -> str | None:
    """Run the pinned CLI's ``xpkg build``, embedding (image, ref); skipped if inputs are unchanged.

    The image tarball (made by crane) exists only for the build: the .xpkg is
    the runtime image (``docker load -i`` reads it too). Returns the embedded
    image's digest.
    """
    if not (CLI.is_file() and os.access(CLI, os.X_OK)):
        raise SystemExit(f"the Crossplane CLI is missing at {CLI}: run `make tools`")
    embedded = f"{image[0].key()} {image[1]}" if image else ""
    key = digest(
        *tree_files(stage), embedded, REPO / "tools" / "go.sum", CRANE_GO_MOD.parent / "go.sum"
    )
    sidecar = out.with_name(out.name + ".key")
    with contextlib.suppress(OSError, ValueError):
        recorded = json.loads(sidecar.read_text())
        if out.is_file() and recorded["key"] == key:
            return recorded["image"]  # type: ignore[no-any-return]
    image_digest = None
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fleetgate-xpkg-", dir=CACHE) as work:
        (Path(work) / "examples").mkdir()
        command = [
            str(CLI), "xpkg", "build",
            "--package-root", str(stage),
            # The default (./examples) would pick up the render cases.
            "--examples-root", str(Path(work) / "examples"),
            "--package-file", str(out),
        ]  # fmt: skip
        if image is not None:
            if crane is None:
                raise ValueError("an image needs crane")
            image_digest = crane.write_image(image[0], Path(work) / "image.tar", image[1])
            command += ["--embed-runtime-image-tarball", str(Path(work) / "image.tar")]
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"crossplane xpkg build failed for {stage.name}:\n{proc.stderr}")
    sidecar.write_text(json.dumps({"key": key, "image": image_digest}))
    return image_digest


def build(
    *,
    arch: str | None = None,
    registry: str = REGISTRY,
    out: Path = DIST,
    refresh: bool = False,
    log: Callable[[str], None] = print,
    version: str | None = None,
) -> dict[str, Any]:
    """Build every package; return (and write to out/packages.json) what was built.
    ``version``: the project's (pyproject.toml) unless given (make e2e's upgrade drill)."""
    started = time.monotonic()
    arch = arch or native_arch()
    version = version or project_version()
    CACHE.mkdir(parents=True, exist_ok=True)
    with (
        exclusive(CACHE / "build.lock"),
        tempfile.TemporaryDirectory(prefix="fleetgate-crane-", dir=CACHE) as work,
        oci.Crane(crane_binary(), Path(work)) as crane,
    ):
        base, base_facts = debian_layer(arch, log, refresh=refresh)
        deps, _ = wheels_layer(arch, base_facts["sonames"], log)
        app, app_facts = project_layer(log)
        layers = [base, deps, app]
        report: dict[str, Any] = {
            "version": version,
            "architecture": arch,
            "registry": registry,
            "layers": {
                "debian": base.to_json(),
                "wheels": deps.to_json(),
                "fleetgate": app.to_json(),
            },
            "debian": base_facts["packages"],
            "functions": {},
        }
        for function in FUNCTIONS:
            image = function_image(function, arch, layers, version)
            xpkg = out / f"{function}-{version}-{arch}.xpkg"
            ref = f"{registry}/{function}:{version}"
            image_digest = xpkg_build(stage_function(function), xpkg, (image, ref), crane)
            startable = bool(app_facts["startable"][function])
            if not startable:
                log(f"warning: {function}: fleetgate has no module for it yet; "
                    "its package is built but the function cannot start")  # fmt: skip
            report["functions"][function] = {
                "package": str(xpkg.relative_to(REPO) if xpkg.is_relative_to(REPO) else xpkg),
                "package_bytes": xpkg.stat().st_size,
                "image_manifest": image_digest,
                "startable": startable,
            }
        configuration = out / f"{CONFIGURATION}-{version}.xpkg"
        xpkg_build(stage_configuration(registry, version), configuration)
        report["configuration"] = {
            "package": str(
                configuration.relative_to(REPO)
                if configuration.is_relative_to(REPO)
                else configuration
            ),
            "package_bytes": configuration.stat().st_size,
        }
        report["image_bytes"] = {
            "compressed": sum(layer.size for layer in layers),
            "uncompressed": uncompressed_size(layers),
        }
        report["seconds"] = round(time.monotonic() - started, 1)
        (out / "packages.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def uncompressed_size(layers: Iterable[oci.Layer]) -> int:
    total = 0
    for layer in layers:
        with gzip.open(layer.path) as gz, tarfile.open(fileobj=gz, mode="r|") as tar:
            total += sum(member.size for member in tar)
    return total


def rootfs(dest: Path, *, arch: str | None = None, log: Callable[[str], None] = print) -> None:
    """Unpack the runtime root filesystem (all three layers) into dest."""
    arch = arch or native_arch()
    CACHE.mkdir(parents=True, exist_ok=True)
    with exclusive(CACHE / "build.lock"):
        base, facts = debian_layer(arch, log)
        layers = [base, wheels_layer(arch, facts["sonames"], log)[0], project_layer(log)[0]]
        # Our layers applied in order; no crane here (package/Dockerfile runs this).
        dest.mkdir(parents=True, exist_ok=True)
        oci.unpack_layers([layer.path for layer in layers], dest)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m package.build", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command")
    parser.add_argument("--arch", choices=sorted(debian.TRIPLETS), help="default: this machine's")
    parser.add_argument(
        "--registry", default=REGISTRY, help=f"where packages are pushed ({REGISTRY})"
    )
    parser.add_argument("--out", type=Path, default=DIST)
    parser.add_argument(
        "--version", help="the version the packages carry (default: pyproject.toml's)"
    )
    parser.add_argument(
        "--refresh", action="store_true", help="re-resolve Debian packages (security updates)"
    )
    sub.add_parser("lock", help="derive nix/wheels.json from uv.lock")
    root = sub.add_parser("rootfs", help="unpack the runtime root filesystem into DEST")
    root.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    if args.command == "lock":
        wheels.write_nix_wheels()
        print(f"wrote {wheels.NIX_WHEELS.relative_to(REPO)}")
    elif args.command == "rootfs":
        rootfs(args.dest, arch=args.arch)
    else:
        report = build(
            arch=args.arch,
            registry=args.registry,
            out=args.out,
            refresh=args.refresh,
            version=args.version,
        )
        for facts in [*report["functions"].values(), report["configuration"]]:
            print(f"{facts['package']}  {facts['package_bytes'] / 1e6:.2f} MB")
        print(f"built in {report['seconds']} s")


if __name__ == "__main__":
    main()
