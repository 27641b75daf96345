"""The XRDs as a Kubernetes API server judges the CRDs Crossplane makes from them.

Crossplane turns each XRD into a CRD; an API server refuses a CRD whose
schema is not structural, whose defaults do not validate, or whose CEL rules
do not compile in its environment or exceed its estimated-cost budget, and
the XRD then never becomes Established. cel-python (tests/unit/test_xrd_cel.py)
checks what the rules mean; this checks that an API server takes them, with
its own code: ``xrdcheck`` (schemas/xrdcheck, built by ``make``) runs
apiextensions-apiserver's ValidateCustomResourceDefinition at the version the
Crossplane CLI pins.
"""

import copy
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
XRDS = sorted((REPO / "apis").glob("*/definition.yaml"))
XRDCHECK = Path(os.environ.get("XRDCHECK", REPO / ".cache" / "bin" / "xrdcheck"))

Schema = dict[str, Any]


def xrdcheck(*paths: Path) -> subprocess.CompletedProcess[str]:
    if not XRDCHECK.exists():
        pytest.fail(f"{XRDCHECK} is missing: `make test` builds it (`make .cache/bin/xrdcheck`)")
    return subprocess.run(
        [str(XRDCHECK), *map(str, paths)],
        check=False,  # the exit code is what is tested
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_xrd_is_accepted() -> None:
    assert len(XRDS) == 6
    out = xrdcheck(*XRDS)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == ""


def _cluster_labels(xrd: Schema) -> Schema:
    schema = xrd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]["properties"]
    labels: Schema = spec["placement"]["properties"]["metadata"]["properties"]["labels"]
    return labels


def unknown_function(xrd: Schema) -> None:
    rules = _cluster_labels(xrd)["x-kubernetes-validations"]
    rules.append({"rule": "self.all(k, k.noSuchFunction())", "message": "m"})


def unbounded_map(xrd: Schema) -> None:
    # Without maxProperties the label-key rule's estimated cost is over budget.
    del _cluster_labels(xrd)["maxProperties"]


def default_of_the_wrong_type(xrd: Schema) -> None:
    schema = xrd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"]["capacity"]["properties"]["gpus"]["default"] = "x"


MUTATIONS: dict[str, tuple[Callable[[Schema], None], str]] = {
    "a CEL function the API server does not have": (unknown_function, "noSuchFunction"),
    "a rule over a map without maxProperties": (unbounded_map, "estimated rule cost exceeds"),
    "a default that does not validate": (default_of_the_wrong_type, "default"),
}


@pytest.mark.parametrize("mutation", MUTATIONS.values(), ids=MUTATIONS.keys())
def test_what_an_api_server_refuses_is_refused(
    tmp_path: Path, mutation: tuple[Callable[[Schema], None], str]
) -> None:
    change, fragment = mutation
    xrd = copy.deepcopy(
        yaml.safe_load((REPO / "apis/inferenceclusters/definition.yaml").read_text())
    )
    change(xrd)
    broken = tmp_path / "definition.yaml"
    broken.write_text(yaml.safe_dump(xrd))
    out = xrdcheck(broken)
    assert out.returncode == 1, out.stdout + out.stderr
    assert fragment in out.stdout


def test_a_model_routes_backends_fit_the_httproute_rule_ai_gateway_generates() -> None:
    """AI Gateway copies a rule's backendRefs into one HTTPRoute rule, so the pinned
    Gateway API CRD's limit there is the ModelRoute's (core/kinds/route.py)."""
    xrd = yaml.safe_load((REPO / "apis" / "modelroutes" / "definition.yaml").read_text())
    (version,) = xrd["spec"]["versions"]
    ours = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["backends"]
    crds = REPO / ".cache" / "crds" / "envoy-gateway"
    (bundle,) = crds.glob("*/gateway-api-bundled/gatewayapi-crds.yaml")
    (httproute,) = (
        d
        for d in yaml.safe_load_all(bundle.read_text())
        if d and d["metadata"]["name"] == "httproutes.gateway.networking.k8s.io"
    )
    for served in httproute["spec"]["versions"]:
        rule = served["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["rules"]
        assert ours["maxItems"] <= rule["items"]["properties"]["backendRefs"]["maxItems"]
