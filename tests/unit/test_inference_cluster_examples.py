"""The walk examples stay true: each folder observes what the previous pass composed."""

import datetime
import itertools
import shutil
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes

from e2e import example_cas, snapshots
from sim.catalog import Example
from tests.support import run_example

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "inference-cluster"
WALK = [EXAMPLES / name for name in snapshots.CLUSTER_WALK]


def test_the_walk_has_every_pass() -> None:
    assert [int(p.name.split("-")[1]) for p in WALK] == list(range(1, len(WALK) + 1))
    assert len(WALK) >= 5


@pytest.mark.parametrize(
    ("before", "after"), list(itertools.pairwise(WALK)), ids=[p.name for p in WALK[1:]]
)
def test_each_pass_observes_what_the_previous_one_composed(before: Path, after: Path) -> None:
    out = run_example(Example(before))
    next_observed = Example(after).observed
    assert set(next_observed) == set(out.desired)
    for name, obj in next_observed.items():
        want = out.desired[name]
        assert obj["spec"] == want["spec"], name
        assert obj["status"]["conditions"][0]["type"] == "Ready"


def _certificates(folder: Path) -> dict[Path, list[x509.Certificate]]:
    found = {}
    for path in sorted(folder.rglob("*.yaml")):
        pems = example_cas.pems(list(yaml.safe_load_all(path.read_text())))
        found[path] = [x509.load_pem_x509_certificate(p.encode()) for p in pems]
    return found


def test_reissued_cas_replace_the_old_ones_everywhere(tmp_path: Path) -> None:
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES / "walk-8-gateway", copy / "walk-8-gateway")
    shutil.copytree(EXAMPLES / "walk-9-schedulable", copy / "walk-9-schedulable")
    before = _certificates(copy)
    century = datetime.timedelta(days=36500)
    written = example_cas.renew(sorted(copy.rglob("*.yaml")), within=century, valid_for=century)
    after = _certificates(copy)
    assert set(written) == {p for p, found in before.items() if found}
    old_to_new = {
        old.fingerprint(hashes.SHA256()): new.fingerprint(hashes.SHA256())
        for path in before
        for old, new in zip(before[path], after[path], strict=True)
    }
    assert len(old_to_new) == 2  # the cluster's CA and gateway public's, each one new CA
    assert len(set(old_to_new.values())) == 2
    assert not set(old_to_new) & set(old_to_new.values())
    for path, found in after.items():
        for old, new in zip(before[path], found, strict=True):
            assert new.subject == old.subject
            assert new.not_valid_after_utc > old.not_valid_after_utc + century / 2
    # The walk still holds: what pass 8 composed is what pass 9 observes.
    out = run_example(Example(copy / "walk-8-gateway"))
    next_observed = Example(copy / "walk-9-schedulable").observed
    for name, obj in next_observed.items():
        assert obj["spec"] == out.desired[name]["spec"], name
