"""schemas.crds: the pinned upstream CRD set, fetched and laid out like ``shared/crds``.

A fetch that fails is a test failure, never a skip. Only the byte-for-byte
comparison with the shared folder skips, and only when that folder is absent.
"""

import re
import shutil
from pathlib import Path

import pytest

from schemas import crds


@pytest.fixture(scope="session")
def fetched() -> Path:
    return crds.fetch()


def test_pins_agree() -> None:
    """The table, go.mod, go.sum and not-on-proxy.sha256 name the same versions and files."""
    assert crds.check_pins() == []


def test_fetch_lays_out_every_source(fetched: Path) -> None:
    for source in crds.SOURCES:
        assert list((fetched / source.folder).glob("*.yaml")), source.folder
        assert (fetched / source.release / "LICENSE").is_file(), source.release
    assert (fetched / "crossplane/v2.2.0/meta/meta.pkg.crossplane.io_functions.yaml").is_file()
    assert not list(fetched.rglob("*vap_safeupgrades*"))
    assert not list(fetched.rglob("kustomization.yaml"))


def test_fetched_set_equals_shared(fetched: Path) -> None:
    if not crds.DEFAULT_SHARED.is_dir():
        pytest.skip(f"{crds.DEFAULT_SHARED} is absent; CI has it at ../shared")
    assert crds.compare(fetched, crds.DEFAULT_SHARED) == []


def test_cert_manager_v1_21_2_keeps_the_crds_of_v1_21_1(fetched: Path) -> None:
    """The pin moved past the shared set's v1.21.1 on the word that the CRDs did not change."""
    if not crds.DEFAULT_SHARED.is_dir():
        pytest.skip(f"{crds.DEFAULT_SHARED} is absent; CI has it at ../shared")
    (source,) = (s for s in crds.SOURCES if s.upstream == "cert-manager")
    ours = fetched / source.release
    shared = crds.DEFAULT_SHARED / source.upstream / source.shared_tag
    assert crds.compare(ours, shared) == []


def test_a_release_past_the_shared_tag_is_left_out(tmp_path: Path) -> None:
    """Ours at the pinned tag and the shared set at its older one are not compared."""
    (source,) = (s for s in crds.SOURCES if s.upstream == "gateway-api-inference-extension")
    ours = make_tree(tmp_path / "ours", {**BASE, f"{source.release}/x.yaml": "new"})
    older = f"{source.upstream}/{source.shared_tag}/x.yaml"
    shared = make_tree(tmp_path / "shared", {**BASE, older: "old"})
    assert crds.compare(ours, shared) == []


def test_second_fetch_is_a_no_op(fetched: Path) -> None:
    stamp = (fetched / crds.STAMP).stat()
    assert crds.fetch() == fetched
    assert (fetched / crds.STAMP).stat().st_mtime_ns == stamp.st_mtime_ns


def test_fetch_repairs_an_edited_file(fetched: Path, tmp_path: Path) -> None:
    dest = tmp_path / "crds"
    shutil.copytree(fetched, dest)
    edited = dest / "cert-manager/v1.21.2/cert-manager.io_certificates.yaml"
    edited.write_text("edited\n")
    crds.fetch(dest)
    assert crds.compare(dest, fetched) == []


def test_fetch_refuses_a_foreign_folder(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(crds.FetchError, match=re.escape("not written by schemas.crds")):
        crds.fetch(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_go_sum_mismatch_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """go refuses a module zip whose hash is not the one in go.sum, even from its cache."""
    module_dir = tmp_path / "module"
    shutil.copytree(crds.GO_MODULE_DIR, module_dir)
    go_sum = module_dir / "go.sum"
    lines = go_sum.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("sigs.k8s.io/gateway-api "))
    module, version, _ = lines[index].split()
    lines[index] = f"{module} {version} h1:{'A' * 43}="
    go_sum.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(crds, "GO_MODULE_DIR", module_dir)
    monkeypatch.setattr(crds, "PINS_FILE", module_dir / crds.PINS_FILE.name)
    with pytest.raises(crds.FetchError, match="checksum mismatch"):
        crds.fetch(tmp_path / "crds")
    assert not (tmp_path / "crds").exists()


def test_a_tampered_vendored_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vendor = tmp_path / "off-proxy"
    shutil.copytree(crds.VENDOR_DIR, vendor)
    victim = vendor / "kuberay" / "v1.7.0" / "ray.io_rayservices.yaml"
    victim.write_text(victim.read_text() + "\n# edited\n")
    monkeypatch.setattr(crds, "VENDOR_DIR", vendor)
    with pytest.raises(crds.FetchError, match=re.escape("ray.io_rayservices.yaml")):
        crds.fetch(tmp_path / "crds")
    assert not (tmp_path / "crds").exists()


def make_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


BASE = {"a/v1/x.yaml": "x", "a/v1/LICENSE": "L", "a/v1/sub/y.yaml": "y"}
COMPARE_CASES = {
    "identical": (BASE, BASE, []),
    "index and readme are not compared": (
        {**BASE, "index.tsv": "1", "README.md": "r"},
        BASE,
        [],
    ),
    "missing file": (BASE, {**BASE, "a/v1/z.yaml": "z"}, ["missing", "a/v1/z.yaml"]),
    "extra file": ({**BASE, "a/v1/z.yaml": "z"}, BASE, ["extra", "a/v1/z.yaml"]),
    "differing file": ({**BASE, "a/v1/sub/y.yaml": "Y"}, BASE, ["differs: a/v1/sub/y.yaml"]),
    "differing licence": ({**BASE, "a/v1/LICENSE": "M"}, BASE, ["differs: a/v1/LICENSE"]),
}


@pytest.mark.parametrize(("ours", "shared", "want"), COMPARE_CASES.values(), ids=COMPARE_CASES)
def test_compare(
    ours: dict[str, str], shared: dict[str, str], want: list[str], tmp_path: Path
) -> None:
    report = crds.compare(
        make_tree(tmp_path / "ours", ours), make_tree(tmp_path / "shared", shared)
    )
    assert len(report) == (1 if want else 0), report
    assert all(word in report[0] for word in want) if want else True


def test_cli_fetches_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shared = crds.DEFAULT_SHARED
    if not shared.is_dir():
        pytest.skip(f"{shared} is absent; CI has it at ../shared")
    assert crds.main(["--dest", str(tmp_path / "crds"), "--check-shared", str(shared)]) == 0
    assert "identical to" in capsys.readouterr().out
    # A shared folder that differs in a file fetched from a Go module fails the check.
    other = tmp_path / "other-shared"
    shutil.copytree(shared, other)
    (other / "envoy-gateway/v1.8.3/gateway.envoyproxy.io_backends.yaml").write_text("x")
    assert crds.main(["--dest", str(tmp_path / "crds"), "--check-shared", str(other)]) == 1
    assert "differs: envoy-gateway/v1.8.3/gateway.envoyproxy.io_backends.yaml" in (
        capsys.readouterr().err
    )
