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


PROVIDER_INSTALL = REPO / "package/install/provider-kubernetes.yaml"


def provider_args() -> list[str]:
    """The flags the install file gives provider-kubernetes."""
    runtime, _ = (d for d in yaml.safe_load_all(PROVIDER_INSTALL.read_text()) if d)
    (container,) = runtime["spec"]["deploymentTemplate"]["spec"]["template"]["spec"]["containers"]
    args: list[str] = container["args"]
    return args


def test_provider_kubernetes_runs_with_watches_enabled() -> None:
    # spec.watch is honoured only with --enable-watches (provider-kubernetes
    # v1.2.1 cmd/provider/main.go:95, 198-200; namespaced/object/object.go:908).
    assert {"--sanitize-secrets", "--enable-watches"} <= set(provider_args())


def test_provider_kubernetes_runs_without_debug_and_its_flags_say_why() -> None:
    """With --debug, provider-kubernetes v1.2.1 logs each Object it updates after resolving
    its references patched the projected Secrets' values into it (namespaced/object/
    object.go:378, 455): the install file leaves it off, and whoever sets the flags there
    reads why not to add it."""
    assert not [a for a in provider_args() if a == "-d" or a.startswith("--debug")]
    comments = [line for line in PROVIDER_INSTALL.read_text().splitlines() if line.startswith("#")]
    warning = " ".join(c.lstrip("# ") for c in comments)
    assert "--debug" in warning
    assert "Secret values" in warning
