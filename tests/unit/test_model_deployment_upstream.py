"""compose-model-deployment: a cluster's API server refusing a field Fleetgate writes.

provider-kubernetes reports a failed apply on the Object (``Synced`` False
with the API server's message). A refusal for an unknown field means the
cluster's upstream is older than Fleetgate renders for: ``ReplicasReady``
False with reason ``IncompatibleUpstream`` (Crossplane owns ``Ready``; the XR
is set not ready), a message that names the object and does not change
between reconciles, and recovery by itself once the upstream is upgraded.
"""

import copy
from typing import Any

import pytest

from fleetgate.core.observed import Observed
from fleetgate.model_deployment import upstream
from tests.unit.test_model_deployment import (
    ARGS,
    cluster,
    deployment,
    endpoints,
    label,
    observe,
    step,
    then,
)

CRD_CREATE = (
    'cannot create object: Workspace.kaito.sh "md-team-a-qwen-0123" is invalid: '
    'strict decoding error: unknown field "inference.template.spec.containers[0].ports[0].foo", '
    'unknown field "resource.instanceTypes"'
)
MERGE_PATCH = 'cannot patch object: strict decoding error: unknown field "spec.rayClusterConfig.x"'
SSA_ONE = (
    "failed to create typed patch object (fleetgate-system/x; ray.io/v1, Kind=RayService): "
    ".spec.serveConfigV3: field not declared in schema"
)
SSA_OTHER = SSA_ONE.replace("serveConfigV3", "rayClusterConfig.autoscalerOptionz")
CEL = (
    'RayService.ray.io "x" is invalid: spec.rayClusterConfig.workerGroupSpecs[0].replicas: '
    "Invalid value: 3: replicas must be between minReplicas and maxReplicas"
)
ENUM = 'Workspace.kaito.sh "x" is invalid: inference.preset.accessMode: Unsupported value: "x"'


def synced(status: str, message: str = "") -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "Synced", "status": status, "message": message}]}}


FIELDS: list[tuple[str, dict[str, Any] | None, tuple[str, ...] | None]] = [
    ("a create refused for two fields, named in order",
     synced("False", CRD_CREATE),
     ("inference.template.spec.containers[0].ports[0].foo", "resource.instanceTypes")),
    ("a merge patch refused", synced("False", MERGE_PATCH), ("spec.rayClusterConfig.x",)),
    ("a server-side apply refused: no field kept (it names one at random)",
     synced("False", SSA_ONE), ()),
    ("a CEL rule is not an incompatibility", synced("False", CEL), None),
    ("an enum is not an incompatibility", synced("False", ENUM), None),
    ("synced", synced("True", CRD_CREATE), None),
    ("not synced, no message", synced("False"), None),
    ("not observed", None, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("observed", "fields"), [c[1:] for c in FIELDS], ids=[c[0] for c in FIELDS]
)
def test_refused_fields(observed: dict[str, Any] | None, fields: tuple[str, ...] | None) -> None:
    assert upstream.refused_fields(Observed.of(observed)) == fields


# --- through the function: refused, stable, recovered ---------------------------------

KUBERAY = cluster("eu-west", providers=("Direct", "KubeRay", "Dynamo"))
RAY = f"{label('eu-west')}-rayservice"


def kuberay_model() -> dict[str, Any]:
    return deployment(
        engine={"args": ARGS}, provider={}, resources={"gpu": {"count": 2}}, replicas=1
    )


def refuse(observed: dict[str, Any], key: str, message: str) -> dict[str, Any]:
    """The Object as provider-kubernetes reports an apply the API server refused."""
    broken = copy.deepcopy(observed)
    obj = broken[key]
    obj["status"] = {
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "Creating"},
            {"type": "Synced", "status": "False", "reason": "ReconcileError", "message": message},
        ]
    }
    return broken


def test_a_refused_field_is_reported_stably_and_recovers() -> None:
    xr = kuberay_model()
    first = step(xr, [KUBERAY])
    assert first.composite["status"]["provider"]["name"] == "KubeRay"
    xr = then(xr, first)
    healthy = observe(first.desired)

    passes = []
    for message in (SSA_ONE, SSA_OTHER):  # server-side apply names a different field each time
        out = step(xr, [KUBERAY], refuse(healthy, RAY, message))
        passes.append(out)
        xr = then(xr, out)
    for out in passes:
        status, reason, text = out.conditions["ReplicasReady"]
        assert (status, reason) == ("False", "IncompatibleUpstream")
        assert text.startswith("cluster eu-west: RayService md-team-a-qwen-")
        assert "(ray.io/v1) was refused by the API server for a field it does not declare" in text
        assert "serveConfigV3" not in text
        assert "autoscalerOptionz" not in text
        assert out.composite_ready == "READY_FALSE"
        assert endpoints(out) == {}
        assert RAY in out.desired, "the object is still composed: an upgrade makes it apply"
        assert any("older than" in w for w in out.warnings)
    assert passes[0].conditions == passes[1].conditions, "no status churn between reconciles"
    assert passes[0].composite["status"] == passes[1].composite["status"]

    # The cluster's KubeRay is upgraded: the Object applies, nothing was touched.
    recovered = step(xr, [KUBERAY], healthy)
    assert recovered.conditions["ReplicasReady"][:2] == ("True", "AllReplicasReady")
    serving = step(then(xr, recovered), [KUBERAY], observe(recovered.desired))
    assert serving.xr_ready


def test_fields_named_by_a_strict_decoding_error_are_reported() -> None:
    xr = kuberay_model()
    first = step(xr, [KUBERAY])
    out = step(then(xr, first), [KUBERAY], refuse(observe(first.desired), RAY, MERGE_PATCH))
    assert (
        "fields it does not declare (spec.rayClusterConfig.x)" in out.conditions["ReplicasReady"][2]
    )


def test_other_refusals_are_not_incompatibility() -> None:
    xr = kuberay_model()
    first = step(xr, [KUBERAY])
    out = step(then(xr, first), [KUBERAY], refuse(observe(first.desired), RAY, CEL))
    assert out.conditions["ReplicasReady"][:2] == ("False", "ReplicasNotReady")
    assert not any("older than" in w for w in out.warnings)


DESCRIBED = [
    ("ray.io/v1", "RayService", "the ray.io CRD installed there is older"),
    ("apps/v1", "Deployment", "the Kubernetes installed there is older"),
    ("v1", "Service", "the Kubernetes installed there is older"),
    ("gateway.networking.k8s.io/v1", "HTTPRoute", "the gateway.networking.k8s.io CRD installed"),
    ("rbac.authorization.k8s.io/v1", "Role", "the Kubernetes installed there"),
]


@pytest.mark.parametrize(
    ("api_version", "kind", "fragment"), DESCRIBED, ids=[c[1] for c in DESCRIBED]
)
def test_the_message_names_what_to_upgrade(api_version: str, kind: str, fragment: str) -> None:
    manifest = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
    text = upstream.describe("eu", manifest, ("a", "b"))
    assert text.startswith(f"cluster eu: {kind} x ({api_version}) was refused")
    assert "fields it does not declare (a, b)" in text
    assert fragment in text
