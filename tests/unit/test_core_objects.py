"""The remote-Object wrapper: watches, and the install manifest that makes them work."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetgate.core.objects import remote_object

REPO = Path(__file__).resolve().parents[2]
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
GATEWAY = {
    "apiVersion": "gateway.networking.k8s.io/v1",
    "kind": "Gateway",
    "metadata": {"name": "g"},
}

CASES = [
    # case, manifest, keyword arguments, watched
    ("default: as before, no watch", GATEWAY, {}, False),
    ("explicit", CONFIGMAP, {"watch": True}, True),
    ("derived: readiness read from the remote object", GATEWAY, {"watch": None}, True),
    (
        "derived: a CEL query over the remote object",
        CONFIGMAP,
        {"watch": None, "readiness_query": "true"},
        True,
    ),
    (
        "derived: observed only (its content is read)",
        CONFIGMAP,
        {"watch": None, "observe_only": True},
        True,
    ),
    ("derived: ready once created, nothing read back", CONFIGMAP, {"watch": None}, False),
]


@pytest.mark.parametrize(("case", "manifest", "kw", "watched"), CASES, ids=[c[0] for c in CASES])
def test_watch(case: str, manifest: dict[str, Any], kw: dict[str, Any], watched: bool) -> None:
    obj = remote_object(manifest=dict(manifest), provider_config="pc", **kw)
    if watched:
        assert obj["spec"]["watch"] is True
    else:
        assert "watch" not in obj["spec"], "false is the CRD's default: left out"


def test_provider_kubernetes_runs_with_watches_enabled() -> None:
    # spec.watch is honoured only with --enable-watches (provider-kubernetes
    # v1.2.1 cmd/provider/main.go:95, 198-200; namespaced/object/object.go:908).
    runtime, _ = (
        d
        for d in yaml.safe_load_all((REPO / "package/install/provider-kubernetes.yaml").read_text())
        if d
    )
    (container,) = runtime["spec"]["deploymentTemplate"]["spec"]["template"]["spec"]["containers"]
    assert {"--sanitize-secrets", "--enable-watches"} <= set(container["args"])
