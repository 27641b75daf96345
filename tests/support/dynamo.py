"""The DynamoGraphDeployment ``nvidia.com/v1beta1`` schema, derived from Dynamo 1.6.1's templates.

Not from the CRD: Dynamo 1.6.1's v1beta1 CRD could not be obtained (the Go module
proxy refuses the Dynamo modules and no package carries the CRD). What could be had
are Dynamo's own v1beta1 DynamoGraphDeployment templates, as the ``ai-dynamo`` 1.6.1
wheel ships them (``dynamo/profiler/templates/dgd/``): the tests download that wheel from
PyPI themselves, check it against its pinned SHA-256 and read the templates inside it
(nothing of them is copied into the project; shared/upstream/dynamo-1.6.1 holds the same
files). ``dynamo_crd()`` walks every
one of them and declares each field path they use with the JSON type they give it
(object, array, string, integer); any other field is unknown and reported, as an API
server reports a field its structural schema does not declare. Where the templates
disagree on a path's type, building the schema fails.

Beyond the templates the schema declares only what Fleetgate writes and the
templates cannot show, each typed as the Kubernetes core/v1 type it is (taken from
the pinned KubeRay CRD, which embeds the same types):

* ``metadata``: an ObjectMeta, which the API server checks, not the CRD;
* ``spec.env``: a list of EnvVar (v1alpha1's ``spec.envs``, renamed in v1beta1);
* a component's ``podTemplate.metadata`` labels and annotations, and its pod spec's
  ``nodeSelector`` and ``tolerations`` (v1beta1 folds v1alpha1's pod metadata and
  extra pod spec into the podTemplate, a core/v1 pod template);
* the ``main`` container's ``env`` (v1beta1 folds v1alpha1's ``envs`` into it);
* ``status``, which the operator writes.

v1beta1's ``multinode.nodeCount`` is not declared: Fleetgate never writes it
(``multinode`` is a sizing key every override refuses).

So the schema checks the shape of the object against what Dynamo's own templates
write, not the operator's behaviour, nor fields the CRD may have that the templates
do not use (those are refused here: Fleetgate writes none). The renderers' tests,
the examples' tests and the hardening suite all validate against it.
"""

import copy
import hashlib
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from schemas import crds

# The ai-dynamo 1.6.1 wheel on PyPI, pinned by its hash as go.sum pins a module.
WHEEL = "ai_dynamo-1.6.1-py3-none-any.whl"
WHEEL_SHA256 = "83f768730104cbbc84029bf436025706632735173933adbb650b99c746517b70"
WHEEL_DIR = Path(__file__).resolve().parents[2] / ".cache" / "dynamo"
TEMPLATES = "dynamo/profiler/templates/dgd/"
JSON_TYPES: dict[type, str] = {dict: "object", list: "array", str: "string", int: "integer"}
# A path step into a list's items.
ITEMS = "[]"
COMPONENT = ("spec", "components", ITEMS)
POD = (*COMPONENT, "podTemplate")
CONTAINER = (*POD, "spec", "containers", ITEMS)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wheel() -> Path:
    """The pinned ai-dynamo wheel, downloaded once (without its dependencies) and checked."""
    path = WHEEL_DIR / WHEEL
    if not path.is_file() or _sha256(path) != WHEEL_SHA256:
        WHEEL_DIR.mkdir(parents=True, exist_ok=True)
        download = ["download", "--quiet", "--no-deps", "--only-binary=:all:"]
        subprocess.run(
            [sys.executable, "-m", "pip", *download, "ai-dynamo==1.6.1", "--dest", str(WHEEL_DIR)],
            check=True,
            timeout=600,
        )
    if _sha256(path) != WHEEL_SHA256:
        raise RuntimeError(f"{path} is not the pinned ai-dynamo 1.6.1 wheel (SHA-256 differs)")
    return path


@cache
def templates() -> dict[str, dict[str, Any]]:
    """Every template in the wheel, by its path below ``TEMPLATES`` (e.g. ``vllm/agg.yaml``)."""
    with zipfile.ZipFile(wheel()) as archive:
        return {
            name.removeprefix(TEMPLATES): yaml.safe_load(archive.read(name))
            for name in sorted(archive.namelist())
            if name.startswith(TEMPLATES) and name.endswith(".yaml")
        }


def derive(values: Sequence[Any], path: str = "") -> dict[str, Any]:
    """The schema of every value seen at one path: its keys or items, or its scalar type."""
    kinds = {JSON_TYPES.get(type(v), type(v).__name__) for v in values}
    if len(kinds) != 1:
        raise ValueError(f"{path or '.'}: the templates give it {sorted(kinds)}")
    (kind,) = kinds
    if kind == "object":
        keys = sorted({k for v in values for k in v})
        return {
            "type": "object",
            "properties": {
                k: derive([v[k] for v in values if k in v], f"{path}.{k}") for k in keys
            },
        }
    if kind == "array":
        return {"type": "array", "items": derive([i for v in values for i in v], path + ITEMS)}
    return {"type": kind}


def _node(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for step in path:
        schema = schema["items"] if step == ITEMS else schema["properties"][step]
    return schema


def _graft(schema: dict[str, Any], path: tuple[str, ...], fields: dict[str, Any]) -> None:
    """Declare ``fields`` at ``path``, which the templates must already have, and no field twice."""
    properties = _node(schema, path)["properties"]
    twice = sorted(set(fields) & set(properties))
    if twice:
        raise ValueError(f"{'.'.join(path)}: the templates already declare {twice}")
    properties.update(fields)


def _core_v1() -> dict[str, Any]:
    """The core/v1 PodSpec schema of the pinned KubeRay CRD."""
    ray = yaml.safe_load((crds.fetch() / "kuberay/v1.7.0/ray.io_rayservices.yaml").read_text())
    (v1,) = (v for v in ray["spec"]["versions"] if v["name"] == "v1")
    cluster = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    head = cluster["rayClusterConfig"]["properties"]["headGroupSpec"]["properties"]
    return copy.deepcopy(head["template"]["properties"]["spec"])


@cache
def dynamo_crd() -> dict[str, Any]:
    """The DynamoGraphDeployment CRD as Dynamo 1.6.1's templates shape it (module docstring)."""
    schema = derive(list(templates().values()))
    pod = _core_v1()["properties"]
    env = pod["containers"]["items"]["properties"]["env"]
    strings = {"type": "object", "additionalProperties": {"type": "string"}}
    schema["properties"]["metadata"] = {"type": "object"}
    schema["properties"]["status"] = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    _graft(schema, ("spec",), {"env": env})
    _graft(
        schema,
        POD,
        {"metadata": {"type": "object", "properties": {"labels": strings, "annotations": strings}}},
    )
    _graft(
        schema,
        (*POD, "spec"),
        {"nodeSelector": pod["nodeSelector"], "tolerations": pod["tolerations"]},
    )
    _graft(schema, CONTAINER, {"env": env})
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
                    "name": "v1beta1",
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
