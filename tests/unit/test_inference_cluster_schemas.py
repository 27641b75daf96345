"""Everything compose-inference-cluster composes, checked by the real `crossplane beta validate`.

The examples only show a few passes; this walks a cluster with the stack
installed from registration to schedulable and validates every object any pass
composes (and every manifest inside an Object) against the pinned upstream
CRDs, unknown fields included.
"""

from typing import Any

import pytest

from fleetgate.inference_cluster import stack
from schemas import validate
from tests.support.inference_cluster import (
    cluster_side,
    cluster_xr,
    gateways,
    manifest_of,
    settle,
)

CRD_KINDS = {("apiextensions.k8s.io/v1", "CustomResourceDefinition")}


def every_composed_object() -> list[dict[str, Any]]:
    objects: dict[str, dict[str, Any]] = {}
    for credentials in ({"secretRef": {"name": "kubeconfig"}}, {"providerConfigName": "prod"}):
        xr = cluster_xr("eu.west-1", credentials=credentials, stack={"install": True})
        for out in settle(xr, gateways("a", "b"), remote=cluster_side()):
            for name, obj in out.desired.items():
                objects[f"{name}/{obj['apiVersion']}/{credentials}"] = obj
    return [objects[k] for k in sorted(objects)]


@pytest.mark.crossplane_cli
def test_every_composed_object_validates_against_the_pinned_crds() -> None:
    objects = every_composed_object()
    # A CRD has no CRD to check it against (the validator knows no such kind):
    # the vendored ones are compared with the pinned upstream files instead
    # (test_inference_cluster_stack); their Object wrappers are built by the
    # same code as every other Object validated here.
    checked = []
    for obj in objects:
        manifest = manifest_of(obj)
        if (manifest.get("apiVersion"), manifest.get("kind")) in CRD_KINDS:
            continue
        # Crossplane names composed resources after the XR (generateName).
        checked.append({**obj, "metadata": {"generateName": "eu.west-1-", **obj["metadata"]}})
    kinds = {manifest_of(o)["kind"] for o in objects}
    assert {"Release", "Gateway", "ClientTrafficPolicy", "Bundle", "Certificate"} <= kinds
    assert len(
        [o for o in objects if (manifest_of(o)["apiVersion"], manifest_of(o)["kind"]) in CRD_KINDS]
    ) == 2 * len(stack.gaie_crd_manifests())  # once per credentials variant
    assert validate.validate(checked) == []
