"""The DynamoGraphDeployment CRD as the Dynamo operator's Go types declare it.

Dynamo's CRD is not in the pinned set (the Go module proxy refuses the module), so
what compose-model-deployment renders for Dynamo is validated against
``dynamo_crd()``: a schema written here from the operator's Go API types, as read
from github.com/ai-dynamo/dynamo (``deploy/cloud/operator/api/v1alpha1``:
``dynamographdeployment_types.go`` at 039eb630, ``dynamocomponentdeployment_types.go``
at 967e177c, ``common.go`` at 6746518), with the core/v1 subschemas (PodSpec,
Container, EnvVar, Probe, ResourceClaim) taken from the pinned KubeRay CRD, which
embeds the same Kubernetes types. Two relaxations follow the operator's own examples,
which set ``extraPodSpec`` with only a ``mainContainer`` and a ``mainContainer``
without a name. Fields outside the types are unknown fields, as a real API server
with the real CRD would report them; what the schema cannot check is the operator's
behaviour (that is what "experimental" means). The renderers' tests and the
hardening suite both validate against it.
"""

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from e2e import crds


def _obj(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        node["required"] = required
    return node


def _array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


@cache
def dynamo_crd() -> dict[str, Any]:
    """The DynamoGraphDeployment CRD as the Go types declare it (module docstring)."""
    ray = yaml.safe_load((crds.fetch() / "kuberay/v1.7.0/ray.io_rayservices.yaml").read_text())
    (v1,) = (v for v in ray["spec"]["versions"] if v["name"] == "v1")
    cluster = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    pod = copy.deepcopy(
        cluster["rayClusterConfig"]["properties"]["headGroupSpec"]["properties"]["template"][
            "properties"
        ]["spec"]
    )
    main = copy.deepcopy(pod["properties"]["containers"]["items"])
    main.pop("required", None)
    env = main["properties"]["env"]["items"]
    probe = main["properties"]["livenessProbe"]
    claim = main["properties"]["resources"]["properties"]["claims"]["items"]
    pod.pop("required", None)
    pod["properties"]["mainContainer"] = main
    string = {"type": "string"}
    strings = {"type": "object", "additionalProperties": string}
    quantity = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    item = _obj({"cpu": string, "memory": string, "gpu": string, "gpuType": string,
                 "custom": strings})  # fmt: skip
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    shared = _obj(
        {
            "annotations": strings,
            "labels": strings,
            "serviceName": string,
            "componentType": string,
            "subComponentType": string,
            "dynamoNamespace": string,
            "globalDynamoNamespace": {"type": "boolean"},
            "resources": _obj({"requests": item, "limits": item, "claims": _array(claim)}),
            "autoscaling": free,  # deprecated upstream; not modelled
            "envs": _array(env),
            "envFromSecret": string,
            "volumeMounts": _array(
                _obj(
                    {
                        "name": string,
                        "mountPoint": string,
                        "useAsCompilationCache": {"type": "boolean"},
                    },
                    ["name"],
                )
            ),
            "ingress": free,
            "modelRef": _obj({"name": string, "revision": string}, ["name"]),
            "sharedMemory": _obj({"disabled": {"type": "boolean"}, "size": quantity}),
            "extraPodMetadata": _obj({"annotations": strings, "labels": strings}),
            "extraPodSpec": pod,
            "livenessProbe": probe,
            "readinessProbe": probe,
            "replicas": {"type": "integer", "format": "int32"},
            "multinode": _obj({"nodeCount": {"type": "integer", "minimum": 2}}, ["nodeCount"]),
        }
    )
    pvc = _obj(
        {
            "create": {"type": "boolean"},
            "name": string,
            "storageClass": string,
            "size": quantity,
            "volumeAccessMode": string,
        },
        ["name"],
    )
    spec = _obj(
        {
            "dynamoGraph": string,
            "pvcs": _array(pvc),
            "services": {"type": "object", "additionalProperties": shared},
            "envs": _array(env),
            "backendFramework": {"type": "string", "enum": ["sglang", "vllm", "trtllm"]},
        }
    )
    schema = _obj(
        {
            "apiVersion": string,
            "kind": string,
            "metadata": {"type": "object"},
            "spec": spec,
            "status": free,
        }
    )
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "dynamographdeployments.nvidia.com"},
        "spec": {
            "group": "nvidia.com",
            "names": {
                "kind": "DynamoGraphDeployment",
                "listKind": "DynamoGraphDeploymentList",
                "plural": "dynamographdeployments",
                "singular": "dynamographdeployment",
                "shortNames": ["dgd"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def dynamo_schema(directory: Path) -> Path:
    path = directory / "nvidia.com_dynamographdeployments.yaml"
    path.write_text(yaml.safe_dump(dynamo_crd(), sort_keys=False))
    return path
