"""Obtain the pinned upstream CRDs and lay them out exactly like ``shared/crds``.

Each file comes from the zip of a pinned upstream Go module: ``go mod download``
runs in ``schemas/crds/`` (a module that only *requires* the upstream modules, so
nothing is built), and the go command checks every zip against
``schemas/crds/go.sum``. The proxy this project can reach refuses a few of the pinned
versions; their files are kept in ``schemas/crds/off-proxy/`` (copied byte for byte from
the upstream tags, licences beside them) and checked against the sha256 sums in
``schemas/crds/not-on-proxy.sha256``. Either way, every
byte that lands in the destination is checked against a sum kept in this repo.

Usage: ``python -m schemas.crds [--dest DIR] [--check-shared DIR]``.
"""

from __future__ import annotations

import argparse
import fcntl
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GO_MODULE_DIR = REPO / "schemas" / "crds"
PINS_FILE = GO_MODULE_DIR / "not-on-proxy.sha256"
VENDOR_DIR = GO_MODULE_DIR / "off-proxy"
DEFAULT_DEST = REPO / ".cache" / "crds"
DEFAULT_SHARED = REPO.parent / "shared" / "crds"

# Written last into a finished destination; its presence (with a matching key
# and matching file sums) is what makes a later fetch a no-op.
STAMP = ".fetched.json"
# Bump when the layout logic changes in a way the table does not show.
LAYOUT_VERSION = 1
GO_TIMEOUT_S = 900.0


class FetchError(RuntimeError):
    """The pinned CRD set could not be obtained or did not match its sums."""


@dataclass(frozen=True)
class Source:
    """One folder of the layout: ``<upstream>/<tag>[/<sub>]/`` filled from ``path`` in a module.

    ``tag`` is both the upstream Git tag and the Go module version. The
    module root's ``LICENSE`` goes to ``<upstream>/<tag>/LICENSE``.
    """

    upstream: str
    tag: str
    module: str
    path: str
    sub: str = ""
    include: str = "*.yaml"
    exclude: tuple[str, ...] = ()
    # False where the Go module proxy reachable here refuses this version
    # (403 "This module version is not available"); see schemas/crds/go.mod.
    on_proxy: bool = True
    # True for a component the project composes that ``shared/crds`` does not
    # carry: its folder is left out of the comparison with that set.
    beyond_shared: bool = False
    # The older tag ``shared/crds`` carries where the project moved this upstream
    # beyond it: both releases are left out of the comparison with that set.
    shared_tag: str = ""

    @property
    def release(self) -> str:
        return f"{self.upstream}/{self.tag}"

    @property
    def folder(self) -> str:
        return f"{self.release}/{self.sub}" if self.sub else self.release


# The one table the layout is driven by. Source paths and exclusions follow
# shared/crds/README.md: the Gateway API folders hold ValidatingAdmissionPolicy
# and kustomize files next to the CRDs, which are not CRDs.
SOURCES: tuple[Source, ...] = (
    Source(
        "envoy-ai-gateway",
        "v1.1.0",
        "github.com/envoyproxy/ai-gateway",
        "manifests/charts/ai-gateway-crds-helm/templates",
        on_proxy=False,
    ),
    Source(
        "envoy-gateway",
        "v1.8.3",
        "github.com/envoyproxy/gateway",
        "charts/gateway-helm/charts/crds/crds/generated",
    ),
    Source(
        "envoy-gateway",
        "v1.8.3",
        "github.com/envoyproxy/gateway",
        "charts/gateway-helm/charts/crds/crds",
        sub="gateway-api-bundled",
        include="gatewayapi-crds.yaml",
    ),
    Source(
        "gateway-api",
        "v1.5.1",
        "sigs.k8s.io/gateway-api",
        "config/crd/standard",
        sub="standard",
        exclude=("*_vap_safeupgrades.yaml",),
    ),
    Source(
        "gateway-api",
        "v1.5.1",
        "sigs.k8s.io/gateway-api",
        "config/crd/experimental",
        sub="experimental",
        exclude=("*_vap_safeupgrades.yaml", "kustomization.yaml"),
    ),
    Source(
        "gateway-api-inference-extension",
        "v1.6.2",
        "sigs.k8s.io/gateway-api-inference-extension",
        "config/crd/bases",
        shared_tag="v1.0.2",
    ),
    # v1.21.2's CRDs are v1.21.1's byte for byte (tests/e2e/test_crds.py checks).
    Source(
        "cert-manager",
        "v1.21.2",
        "github.com/cert-manager/cert-manager",
        "deploy/crds",
        shared_tag="v1.21.1",
    ),
    Source(
        "trust-manager",
        "v0.25.0",
        "github.com/cert-manager/trust-manager",
        "deploy/crds",
        shared_tag="v0.24.0",
    ),
    Source(
        "provider-kubernetes",
        "v1.2.1",
        "github.com/crossplane-contrib/provider-kubernetes",
        "package/crds",
    ),
    Source("crossplane", "v2.2.0", "github.com/crossplane/crossplane/v2", "cluster/crds"),
    Source(
        "crossplane", "v2.2.0", "github.com/crossplane/crossplane/v2", "cluster/meta", sub="meta"
    ),
    Source(
        "provider-helm",
        "v1.4.0",
        "github.com/crossplane-contrib/provider-helm",
        "package/crds",
        on_proxy=False,
    ),
    Source(
        "kaito", "v0.12.0", "github.com/kaito-project/kaito", "config/crd/bases", on_proxy=False
    ),
    # KubeRay's CRDs sit in the nested ray-operator module, not the root one.
    Source(
        "kuberay",
        "v1.7.0",
        "github.com/ray-project/kuberay/ray-operator",
        "config/crd/bases",
        on_proxy=False,
    ),
    Source("lws", "v0.10.0", "sigs.k8s.io/lws", "config/crd/bases", on_proxy=False),
    # The one kind composed from it: a failover alert's PrometheusRule.
    Source(
        "prometheus-operator",
        "v0.94.1",
        "github.com/prometheus-operator/prometheus-operator",
        "example/prometheus-operator-crd",
        include="monitoring.coreos.com_prometheusrules.yaml",
        beyond_shared=True,
    ),
    # The one kind composed from it: a scaling deployment's ScaledObject.
    Source(
        "keda",
        "v2.20.0",
        "github.com/kedacore/keda/v2",
        "config/crd/bases",
        include="keda.sh_scaledobjects.yaml",
        beyond_shared=True,
    ),
    Source(
        "llm-d-router",
        "v0.10.0",
        "github.com/llm-d/llm-d-router",
        "config/crd/bases",
        on_proxy=False,
    ),
)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _is_tracked(path: Path) -> bool:
    """The files that make up the set: CRD YAML and licences (not index.tsv, README, stamp)."""
    return path.suffix == ".yaml" or path.name == "LICENSE"


def _tracked_files(root: Path) -> dict[str, Path]:
    return {
        p.relative_to(root).as_posix(): p
        for p in sorted(root.rglob("*"))
        if p.is_file() and _is_tracked(p) and not p.name.startswith(".")
    }


def _strip_comment(line: str) -> str:
    return line.split("//", 1)[0].strip()


def read_go_mod_requires(go_mod: Path) -> dict[str, str]:
    """Module path -> version for every ``require`` in go.mod (block or single-line form)."""
    requires: dict[str, str] = {}
    in_block = False
    for raw in go_mod.read_text(encoding="utf-8").splitlines():
        line = _strip_comment(raw)
        if in_block:
            if line == ")":
                in_block = False
            elif line:
                module, version = line.split()[:2]
                requires[module] = version
        elif line == "require (":
            in_block = True
        elif line.startswith("require "):
            module, version = line.split()[1:3]
            requires[module] = version
    return requires


def read_go_sum(go_sum: Path) -> dict[tuple[str, str], str]:
    """(module, version) -> zip hash; the ``/go.mod`` hashes are not about file content."""
    sums: dict[tuple[str, str], str] = {}
    for line in go_sum.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) == 3 and not fields[1].endswith("/go.mod"):
            sums[(fields[0], fields[1])] = fields[2]
    return sums


def read_pins(pins_file: Path) -> dict[str, str]:
    """Relative path -> sha256 from a ``sha256sum``-style file (``#`` lines are comments)."""
    pins: dict[str, str] = {}
    for line in pins_file.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            digest, rel = line.split(maxsplit=1)
            pins[rel.strip()] = digest
    return pins


def check_pins() -> list[str]:
    """Problems that make the table, go.mod, go.sum and the pins file disagree."""
    problems: list[str] = []
    wanted = {s.module: s.tag for s in SOURCES if s.on_proxy}
    requires = read_go_mod_requires(GO_MODULE_DIR / "go.mod")
    if requires != wanted:
        problems.append(
            f"schemas/crds/go.mod requires {requires}, the SOURCES table wants {wanted}"
        )
    sums = read_go_sum(GO_MODULE_DIR / "go.sum")
    problems.extend(
        f"schemas/crds/go.sum has no zip hash for {module} {tag}"
        for module, tag in wanted.items()
        if (module, tag) not in sums
    )
    pinned = read_pins(PINS_FILE)
    off_proxy = {s.folder for s in SOURCES if not s.on_proxy}
    off_releases = {s.release for s in SOURCES if not s.on_proxy}
    for rel in pinned:
        folder, _, name = rel.rpartition("/")
        if not (folder in off_proxy or (name == "LICENSE" and folder in off_releases)):
            problems.append(f"{PINS_FILE.name} pins {rel}, which no off-proxy SOURCES row covers")
    for folder in sorted(off_proxy):
        if not any(rel.rpartition("/")[0] == folder for rel in pinned):
            problems.append(f"{PINS_FILE.name} pins no file for {folder}")
    return problems


def _cache_key() -> str:
    """Changes whenever anything that decides the bytes of the set changes."""
    digest = hashlib.sha256()
    digest.update(json.dumps([LAYOUT_VERSION, [asdict(s) for s in SOURCES]]).encode())
    for path in (GO_MODULE_DIR / "go.mod", GO_MODULE_DIR / "go.sum", PINS_FILE):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _is_complete(dest: Path, key: str) -> bool:
    try:
        stamp = json.loads((dest / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(stamp, dict) or stamp.get("key") != key:
        return False
    files = stamp.get("files")
    if not isinstance(files, dict):
        return False
    present = _tracked_files(dest)
    if set(present) != set(files):
        return False
    # Hashing ~17 MB costs tens of milliseconds and catches hand edits.
    return all(_sha256(path) == files[rel] for rel, path in present.items())


def _iter_json_stream(text: str) -> Iterator[dict[str, object]]:
    """``go mod download -json`` prints concatenated JSON objects, not a JSON array."""
    decoder = json.JSONDecoder()
    index = 0
    while True:
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            return
        value, index = decoder.raw_decode(text, index)
        if isinstance(value, dict):
            yield value


def _go_download(modules: Sequence[str]) -> dict[str, Path]:
    """Download the given required modules; return module -> extracted directory."""
    go = shutil.which("go")
    if go is None:
        raise FetchError("the `go` command is not on PATH; Go 1.25+ is needed to fetch CRDs")
    env = dict(os.environ)
    # readonly: never let go rewrite go.mod/go.sum (a missing or wrong sum must fail);
    # local toolchain: no toolchain download; GOWORK=off: no surrounding go.work.
    env.update(GOFLAGS="-mod=readonly", GOTOOLCHAIN="local", GOWORK="off", GO111MODULE="on")
    try:
        proc = subprocess.run(
            [go, "mod", "download", "-json", *modules],
            cwd=GO_MODULE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=GO_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise FetchError(f"go mod download timed out after {GO_TIMEOUT_S:.0f}s") from exc
    try:
        results = list(_iter_json_stream(proc.stdout))
    except ValueError:
        results = []
    sums = read_go_sum(GO_MODULE_DIR / "go.sum")
    wanted = read_go_mod_requires(GO_MODULE_DIR / "go.mod")
    dirs: dict[str, Path] = {}
    errors: list[str] = []
    for result in results:
        path, version = str(result.get("Path")), str(result.get("Version"))
        if result.get("Error"):
            errors.append(f"{path}@{version}: {result['Error']}")
        elif version != wanted.get(path):
            errors.append(f"{path}: go selected {version}, go.mod pins {wanted.get(path)}")
        elif result.get("Sum") != sums.get((path, version)):
            # go already refuses a zip that disagrees with go.sum; this also
            # catches a go.sum that lost its line for this module.
            errors.append(f"{path}@{version}: sum {result.get('Sum')} is not the one in go.sum")
        else:
            dirs[path] = Path(str(result["Dir"]))
    missing = [m for m in modules if m not in dirs]
    if proc.returncode != 0 or errors or missing:
        detail = "\n  ".join(errors or [proc.stderr.strip() or f"exit code {proc.returncode}"])
        raise FetchError(
            f"go mod download failed for {', '.join(missing) or 'some modules'}:\n  {detail}"
        )
    return dirs


def _select(folder: Path, source: Source) -> list[Path]:
    chosen = [
        p
        for p in sorted(folder.iterdir())
        if p.is_file()
        and fnmatch.fnmatch(p.name, source.include)
        and not any(fnmatch.fnmatch(p.name, pattern) for pattern in source.exclude)
    ]
    if not chosen:
        raise FetchError(f"{source.module}@{source.tag}: no {source.include} in {source.path}")
    return chosen


def _layout(out: Path) -> None:
    """Fill ``out`` with every file of the set, each checked against a sum kept in this repo."""
    problems = check_pins()
    if problems:
        raise FetchError("the CRD pins disagree:\n  " + "\n  ".join(problems))
    on_proxy = [s for s in SOURCES if s.on_proxy]
    module_dirs = _go_download(sorted({s.module for s in on_proxy}))
    for source in on_proxy:
        root = module_dirs[source.module]
        target = out / source.folder
        target.mkdir(parents=True, exist_ok=True)
        for path in _select(root / source.path, source):
            shutil.copyfile(path, target / path.name)
        licence = root / "LICENSE"
        if not licence.is_file():
            raise FetchError(f"{source.module}@{source.tag} has no LICENSE at its root")
        shutil.copyfile(licence, out / source.release / "LICENSE")

    # The proxy refuses these pinned versions, so their files are kept in the
    # repository (schemas/crds/off-proxy/, Apache-2.0, LICENSE beside them) and each
    # one is checked against its sum, exactly like a module zip against go.sum.
    for rel, digest in sorted(read_pins(PINS_FILE).items()):
        origin = VENDOR_DIR / rel
        if not origin.is_file():
            raise FetchError(f"{origin} is missing from the vendored CRD files")
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(origin, target)
        if _sha256(target) != digest:
            raise FetchError(f"{origin} does not match its sha256 in {PINS_FILE.name}")


@contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Serialise fetches of one destination (parallel test processes share it)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def fetch(dest: Path = DEFAULT_DEST) -> Path:
    """Make ``dest`` hold the pinned CRD set; a no-op when it already does. Returns ``dest``."""
    dest = dest.resolve()
    key = _cache_key()
    with _locked(dest.parent / f".{dest.name}.lock"):
        if _is_complete(dest, key):
            return dest
        if dest.exists() and any(dest.iterdir()) and not (dest / STAMP).exists():
            # Replacing a folder we did not write could destroy someone's files.
            raise FetchError(f"{dest} exists, is not empty and was not written by schemas.crds")
        staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.new-", dir=dest.parent))
        staging.chmod(0o755)  # mkdtemp makes it private; the set is not secret
        try:
            _layout(staging)
            files = {rel: _sha256(p) for rel, p in _tracked_files(staging).items()}
            (staging / STAMP).write_text(
                json.dumps({"key": key, "files": files}, indent=1, sort_keys=True) + "\n",
                encoding="utf-8",
            )
            # Swap whole folders so a reader never sees half a set.
            old = None
            if dest.exists():
                old = dest.parent / f".{dest.name}.old-{os.getpid()}"
                dest.rename(old)
            staging.rename(dest)
            if old is not None:
                shutil.rmtree(old)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
    return dest


def compare(ours: Path, shared: Path) -> list[str]:
    """Byte-for-byte differences between two CRD sets (``*.yaml`` and ``LICENSE`` files only).

    Releases the shared set does not carry (``Source.beyond_shared``), and those
    pinned past the shared set's tag (``Source.shared_tag``) with that older tag,
    are left out.
    """
    beyond = tuple(f"{s.release}/" for s in SOURCES if s.beyond_shared or s.shared_tag)
    older = tuple(f"{s.upstream}/{s.shared_tag}/" for s in SOURCES if s.shared_tag)
    mine, theirs = (
        {rel: p for rel, p in _tracked_files(root).items() if not rel.startswith(skip)}
        for root, skip in ((ours, beyond), (shared, beyond + older))
    )
    report = [
        f"missing (in {shared}, not in {ours}): {rel}" for rel in sorted(theirs - mine.keys())
    ]
    report += [f"extra (in {ours}, not in {shared}): {rel}" for rel in sorted(mine - theirs.keys())]
    report += [
        f"differs: {rel}"
        for rel in sorted(mine.keys() & theirs.keys())
        if mine[rel].read_bytes() != theirs[rel].read_bytes()
    ]
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m schemas.crds", description="Fetch the pinned upstream CRDs."
    )
    parser.add_argument(
        "--dest",
        type=Path,
        default=DEFAULT_DEST,
        help=f"where to lay out the CRDs (default: {DEFAULT_DEST})",
    )
    parser.add_argument(
        "--check-shared",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"compare with this folder byte for byte (default: {DEFAULT_SHARED} when it exists)",
    )
    args = parser.parse_args(argv)
    shared: Path = args.check_shared if args.check_shared is not None else DEFAULT_SHARED
    started = time.monotonic()
    try:
        dest = fetch(args.dest)
    except FetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    count = len(_tracked_files(dest))
    print(f"{count} files in {dest} ({time.monotonic() - started:.2f}s)")
    if not shared.is_dir():
        if args.check_shared is not None:
            print(f"error: --check-shared {shared} is not a directory", file=sys.stderr)
            return 2
        print(f"note: {shared} does not exist; nothing to compare with")
        return 0
    differences = compare(dest, shared)
    if differences:
        print(f"error: {dest} differs from {shared}:", file=sys.stderr)
        for line in differences:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"identical to {shared}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
