"""The image's Python packages: locked, downloaded by pip, installed without pip.

``uv.lock`` (``uv lock``: ``make package-lock``) pins every Python
distribution, the development environment's and the image's, with each file's
URL and sha256 for every platform. For each image architecture the runtime
closure (fleetgate's own dependencies, markers evaluated for the image's
Linux and Python) is taken from it, with the wheel pip would choose there;
``pip download --require-hashes`` fetches exactly those files, and the PyPA
``installer`` library installs them into the image with console scripts that
name the image's interpreter, and no record of the build machine (no
``direct_url.json``) ends up in the image. The Nix build (``nix/image.nix``)
reads the same choice from ``nix/wheels.json``, which ``make package-lock``
derives from the lock.
"""

from __future__ import annotations

import compileall
import json
import py_compile
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.sources import WheelFile
from packaging import tags
from packaging.markers import Marker
from packaging.utils import canonicalize_name, parse_wheel_filename

from package import oci

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "uv.lock"
NIX_WHEELS = REPO / "nix" / "wheels.json"
PROJECT = "fleetgate"
PYTHON = "3.11"
INTERPRETER = f"/usr/bin/python{PYTHON}"
SITE = f"usr/local/lib/python{PYTHON}/dist-packages"  # on Debian's sys.path
BIN = "usr/local/bin"
GLIBC_MINOR = 36  # Debian bookworm's glibc 2.36 runs every manylinux_2_x wheel up to it
WHEEL_ARCH = {"amd64": "x86_64", "arm64": "aarch64"}

Package = Mapping[str, Any]


class WheelError(RuntimeError):
    """The locked Python packages cannot be fetched or installed."""


def platforms(arch: str) -> list[str]:
    """The image's wheel platform tags, most specific first."""
    machine = WHEEL_ARCH[arch]
    found = [f"manylinux_2_{minor}_{machine}" for minor in range(GLIBC_MINOR, 16, -1)]
    return [*found, f"manylinux2014_{machine}"]


def target_args(arch: str) -> list[str]:
    """pip options selecting wheels for the image, not for the machine running pip."""
    args = ["--only-binary=:all:", "--python-version", PYTHON]
    args += ["--implementation", "cp", "--abi", f"cp{PYTHON.replace('.', '')}"]
    for tag in platforms(arch):
        args += ["--platform", tag]
    return args


def image_environment(arch: str) -> dict[str, str]:
    """PEP 508 marker values of the image's interpreter (Debian's CPython on Linux)."""
    return {
        "implementation_name": "cpython",
        "implementation_version": f"{PYTHON}.0",
        "os_name": "posix",
        "platform_machine": WHEEL_ARCH[arch],
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": f"{PYTHON}.0",
        "python_version": PYTHON,
        "sys_platform": "linux",
    }


def read_lock(path: Path = LOCK) -> dict[str, Any]:
    with path.open("rb") as f:
        return tomllib.load(f)


def closure(
    lock_data: Mapping[str, Any],
    environment: Mapping[str, str] | None = None,
    extras: Sequence[str] = (),
) -> list[Package]:
    """The locked packages the project needs where environment holds (None: here).

    Walks the project's dependencies (and those of its extras) through the
    lock, keeping only the edges whose markers hold; a dependency names its
    version where the lock holds more than one of that package (a fork).
    """
    packages = lock_data["package"]
    by_name: dict[str, list[Package]] = {}
    for package in packages:
        by_name.setdefault(package["name"], []).append(package)
    env = dict(environment) if environment is not None else None

    def holds(dep: Mapping[str, Any]) -> bool:
        return "marker" not in dep or Marker(dep["marker"]).evaluate(env)

    def resolve(dep: Mapping[str, Any]) -> Package:
        candidates = by_name[dep["name"]]
        if "version" in dep:
            candidates = [c for c in candidates if c["version"] == dep["version"]]
        if len(candidates) != 1:
            raise WheelError(f"uv.lock: no single locked {dep['name']} {dep.get('version', '')}")
        return candidates[0]

    (project,) = by_name[PROJECT]
    todo = list(project.get("dependencies", []))
    for extra in extras:
        todo += project.get("optional-dependencies", {}).get(extra, [])
    found: dict[tuple[str, str], Package] = {}
    while todo:
        dep = todo.pop()
        if not holds(dep):
            continue
        package = resolve(dep)
        key = (package["name"], package["version"])
        if key in found:
            continue
        found[key] = package
        todo += package.get("dependencies", [])
        for extra in dep.get("extra", []):
            todo += package.get("optional-dependencies", {}).get(extra, [])
    return sorted(found.values(), key=lambda p: (p["name"], p["version"]))


def best_wheel(package: Package, supported: Sequence[tags.Tag]) -> Mapping[str, Any]:
    """The package's locked wheel that ranks first among the supported tags, as pip ranks."""
    rank = {tag: i for i, tag in enumerate(supported)}
    scored: list[tuple[int, str, Mapping[str, Any]]] = []
    for wheel in package.get("wheels", []):
        filename = wheel["url"].rsplit("/", 1)[1]
        ranks = [rank[t] for t in parse_wheel_filename(filename)[3] if t in rank]
        if ranks:
            scored.append((min(ranks), filename, wheel))
    if not scored:
        raise WheelError(f"uv.lock has no wheel of {package['name']} {package['version']} here")
    return min(scored, key=lambda s: s[:2])[2]


def image_wheels(lock_data: Mapping[str, Any], arch: str) -> list[dict[str, str]]:
    """The runtime closure's wheels for the image on arch: name, version, file, URL, sha256."""
    py = tuple(int(part) for part in PYTHON.split("."))
    abi = f"cp{PYTHON.replace('.', '')}"
    supported = [
        *tags.cpython_tags(py, abis=[abi], platforms=platforms(arch)),
        *tags.compatible_tags(py, interpreter=abi, platforms=platforms(arch)),
    ]
    entries = []
    for package in closure(lock_data, image_environment(arch)):
        wheel = best_wheel(package, supported)
        algorithm, _, sha256 = wheel["hash"].partition(":")
        if algorithm != "sha256":  # pip's --require-hashes and Nix's fetchurl take sha256
            raise WheelError(f"uv.lock: {package['name']}: a {algorithm} hash, not sha256")
        entries.append(
            {
                "name": package["name"],
                "version": package["version"],
                "filename": wheel["url"].rsplit("/", 1)[1],
                "url": wheel["url"],
                "sha256": sha256,
            }
        )
    return entries


def nix_wheels(lock_data: Mapping[str, Any]) -> dict[str, Any]:
    """nix/wheels.json: the image wheels of every architecture, derived from the lock."""
    return {
        "comment": "Derived from uv.lock by `make package-lock` for nix/image.nix; do not edit.",
        "wheels": {
            arch: [{"url": e["url"], "sha256": e["sha256"]} for e in image_wheels(lock_data, arch)]
            for arch in WHEEL_ARCH
        },
    }


def write_nix_wheels(path: Path = NIX_WHEELS) -> None:
    path.write_text(json.dumps(nix_wheels(read_lock()), indent=1) + "\n")


def development_versions(lock_data: Mapping[str, Any]) -> dict[str, str]:
    """What the development environment holds on this machine: the closure with extra dev."""
    return {
        canonicalize_name(p["name"]): p["version"]
        for p in closure(lock_data, extras=["dev"])
        if p["name"] != PROJECT
    }


def _pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise WheelError(f"pip {' '.join(args[:2])} failed:\n{proc.stdout}{proc.stderr}")


def download(entries: Sequence[Mapping[str, str]], arch: str, dest: Path) -> list[Path]:
    """The locked wheels (image_wheels), fetched by pip from their URLs, hash-checked, into dest."""
    if not entries:
        raise WheelError(f"uv.lock gives no wheels for {arch}; run `make package-lock`")
    dest.mkdir(parents=True, exist_ok=True)
    missing = [e for e in entries if not (dest / e["filename"]).is_file()]
    if missing:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
            req.writelines(
                f"{e['name']} @ {e['url']} --hash=sha256:{e['sha256']}\n" for e in missing
            )
        try:
            _pip("download", "--no-deps", "--require-hashes", "--quiet", "-d", str(dest),
                 "-r", req.name, *target_args(arch))  # fmt: skip
        finally:
            Path(req.name).unlink()
    paths = [dest / e["filename"] for e in entries]
    for entry, path in zip(entries, paths, strict=True):
        if not path.is_file() or oci.file_sha256(path) != entry["sha256"]:
            raise WheelError(f"{entry['filename']}: missing or not the locked file")
    return paths


def build_wheel(source: Path, dest: Path) -> Path:
    """Build the project's wheel from a clean copy of its sources (isolated build)."""
    dest.mkdir(parents=True, exist_ok=True)
    _pip("wheel", "--no-deps", "--quiet", "--wheel-dir", str(dest), str(source))
    built = sorted(dest.glob("*.whl"))
    if len(built) != 1:
        raise WheelError(f"expected one wheel from {source}, found {[p.name for p in built]}")
    return built[0]


def install_wheels(wheels: Sequence[Path], root: Path) -> None:
    """Install wheels into root's /usr/local the way Debian's Python looks for them."""
    scheme = {
        "purelib": f"/{SITE}",
        "platlib": f"/{SITE}",
        "headers": f"/usr/local/include/python{PYTHON}",
        "scripts": f"/{BIN}",
        "data": "/usr/local",
    }
    destination = SchemeDictionaryDestination(
        scheme, interpreter=INTERPRETER, script_kind="posix", destdir=str(root)
    )
    for wheel in wheels:
        with WheelFile.open(wheel) as source:
            install(source, destination, {"INSTALLER": b"fleetgate package/build.py\n"})


def byte_compile(root: Path, directory: str) -> bool:
    """Compile root/directory to hash-checked .pyc, as the image's interpreter would.

    The image's user cannot write __pycache__, so without this every start
    recompiles everything it imports. Hash-based pycs do not depend on the
    layer's fixed timestamps. Only an interpreter of the image's minor version
    writes byte code the image can use: with another, nothing is compiled.
    """
    if f"{sys.version_info.major}.{sys.version_info.minor}" != PYTHON:
        print(f"warning: Python {PYTHON} is needed to byte-compile {directory}; skipped")
        return False
    ok = compileall.compile_dir(
        root / directory,
        ddir=f"/{directory}",
        quiet=2,
        workers=0,
        invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
    )
    if not ok:
        raise WheelError(f"byte-compiling /{directory} failed")
    return True
