"""KAITO: a ``kaito.sh/v1beta1`` Workspace runs the engine; KAITO's Service fronts it.

A Workspace keeps its fields at the top level (``resource``, ``inference``),
not under ``spec``. Two ways to run, by engine:

* **vLLM on GPUs** through KAITO's preset for the model (``inference.preset``):
  KAITO picks the image and starts vLLM. The served model name and the user's
  engine flags reach vLLM through a ConfigMap KAITO reads
  (``inference.config``, key ``inference_config.yaml``, section ``vllm``): a
  preset's container is KAITO's, so Fleetgate cannot put its variable there.
* **llama.cpp (GGUF) on CPU or GPU** through a pod template
  (``inference.template``) running the llama.cpp server, model and served name
  on its command line like Dynamo's workers.

KAITO serves on container port 5000 behind a Service named after the
Workspace on port 80, whichever way it runs; the route targets that Service.
Pinned to KAITO v0.12.0 (the CRD the clusters run).

KAITO's admission webhook judges ``resource.instanceType`` by whether it
provisions nodes itself (api/v1beta1/workspace_validation.go:172-184 on
create, :791-809 on update, v0.12.0): with node auto-provisioning on, KAITO's
default (charts/kaito/workspace/values.yaml:41, pkg/featuregates/
featuregates.go:29), a Workspace without one is refused; with it off (bring
your own nodes), one with it is. Which way a cluster runs is its
InferenceCluster's ``spec.kaito``; a deployment the cluster's KAITO would
refuse is not placed there, and ``Scheduled`` says which field to set.
"""

import json
from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import BaseModel, Field, ValidationInfo, model_validator

from fleetgate.core.models import InferenceCluster, ServingProvider
from fleetgate.core.observed import Observed
from fleetgate.core.readiness import condition_query
from fleetgate.model_deployment import engine as engines
from fleetgate.model_deployment import naming
from fleetgate.model_deployment.overrides import LabelSelector, Strict, merge, upstream
from fleetgate.model_deployment.providers import pods
from fleetgate.model_deployment.providers.base import (
    Manifest,
    RemotePart,
    Rendered,
    Renderer,
    Workload,
)

API_VERSION = "kaito.sh/v1beta1"
SERVER_PORT = 5000  # where KAITO's Service sends traffic, preset or template
SERVICE_PORT = 80
CONFIG_KEY = "inference_config.yaml"
# Stamped with the Workspace's generation (kaito v0.12.0 pkg/workspace/controllers/
# workspace_controller.go:1218-1227): judged against it (core.readiness.Stamp).
READY_CONDITION = "WorkspaceSucceeded"
WORKSPACE_PART = "workspace"
CONFIG_PART = "config"
# KAITO names its Deployment, Service and pods after the Workspace.
NAME_MAX = 40
GPU_NODES = {"nvidia.com/gpu.present": "true"}


def workspace_name(workload: Workload) -> str:
    return naming.fitted(workload.name, NAME_MAX)


def config_name(workload: Workload) -> str:
    return naming.fitted(workload.name, NAME_MAX - len("-config")) + "-config"


def node_selector(workload: Workload) -> dict[str, Any]:
    labels = {"kubernetes.io/os": "linux", **(GPU_NODES if workload.gpus > 0 else {})}
    return {"matchLabels": labels}


def template_engine(workload: Workload) -> Workload:
    """The workload with llama.cpp started on KAITO's port, model and served name given."""
    run = workload.engine
    args = engines.launch_args(run.type, run.args, workload.model)
    if engines.flag(args, "--port") is None:
        args += ("--port", str(SERVER_PORT))
    return workload._replace(engine=run._replace(args=args, port=SERVER_PORT))


def preset_config(workload: Workload) -> tuple[Manifest, tuple[str, ...]]:
    """The ConfigMap handing vLLM the served model name and the user's flags, and notes."""
    flags, positionals = engines.flag_values(workload.engine.args, workload.served)
    flags.pop("model", None)  # the preset names the model
    flags["served-model-name"] = workload.served
    notes = (
        (
            "KAITO runs vLLM from its preset: positional spec.engine.args are not passed "
            f"({len(positionals)} ignored)",
        )
        if positionals
        else ()
    )
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": pods.metadata(workload, config_name(workload)),
        # JSON is YAML, and keeps the function free of a YAML dependency.
        "data": {CONFIG_KEY: json.dumps({"vllm": dict(sorted(flags.items()))}, indent=2) + "\n"},
    }
    return config, notes


def workspace(workload: Workload) -> Manifest:
    inference: dict[str, Any]
    if workload.engine.type == "llamacpp":
        runner = template_engine(workload)
        inference = {
            "template": {
                "metadata": {"labels": {**workload.labels, **workload.selector}},
                "spec": pods.pod_spec(runner),
            }
        }
    else:
        inference = {"preset": {"name": workload.model}, "config": config_name(workload)}
    resource: Manifest = {"count": workload.replicas, "labelSelector": node_selector(workload)}
    if workload.instance_type is not None:
        resource["instanceType"] = workload.instance_type
    base: Manifest = {
        "apiVersion": API_VERSION,
        "kind": "Workspace",
        "metadata": pods.metadata(workload, workspace_name(workload)),
        "resource": resource,
        "inference": inference,
    }
    return merge(base, upstream(workload.overrides))


def instance_type_override(workload: Workload) -> str | None:
    """``spec.provider.overrides.resource.instanceType``, if given."""
    decoded = workload.overrides
    if isinstance(decoded, KAITOOverrides) and decoded.resource is not None:
        return decoded.resource.instance_type
    return None


# --- overrides: the Workspace's own roots ----------------------------------------


NodeName = Annotated[str, Field(max_length=253)]


class ResourceOverride(Strict):
    """Which nodes KAITO uses or provisions; ``count`` is sizing and comes from spec.replicas."""

    instance_type: Annotated[str, Field(min_length=1, max_length=253)] | None = None
    label_selector: LabelSelector | None = None
    preferred_nodes: Annotated[list[NodeName], Field(max_length=64)] | None = None


class PresetOptions(Strict):
    # The name of a Secret (in the cluster's fleetgate-system) holding a
    # Hugging Face token for gated models: a name, never a value.
    model_access_secret: Annotated[str, Field(min_length=1, max_length=253)] | None = None


class PresetOverride(Strict):
    preset_options: PresetOptions | None = None


class InferenceOverride(Strict):
    preset: PresetOverride | None = None

    @model_validator(mode="after")
    def _preset_engines_only(self, info: ValidationInfo) -> Self:
        if self.preset is not None and (info.context or {}).get("engine") == "llamacpp":
            raise ValueError("KAITO runs llama.cpp from a pod template: preset does not apply")
        return self


class KAITOOverrides(Strict):
    resource: ResourceOverride | None = None
    inference: InferenceOverride | None = None


class KAITO(Renderer):
    name: ServingProvider = "KAITO"
    overrides: type[BaseModel] = KAITOOverrides
    sizing_paths: frozenset[str] = frozenset({"resource.count"})

    def check(self, workload: Workload) -> str | None:
        found = engines.flag(workload.engine.args, "--port")
        if workload.engine.type == "llamacpp" and found and found[1] != str(SERVER_PORT):
            return (
                f"serves on port {SERVER_PORT} (its Service targets it): remove --port from "
                f"spec.engine.args[{found[0]}] or set it to {SERVER_PORT}"
            )
        return None

    def refuses_cluster(self, workload: Workload, cluster: InferenceCluster) -> str | None:
        kaito = cluster.spec.kaito
        override = instance_type_override(workload)
        if kaito.node_auto_provisioning and override is None and kaito.instance_type is None:
            return (
                "KAITO provisions nodes there (InferenceCluster spec.kaito.nodeAutoProvisioning, "
                "KAITO's default) and its admission webhook refuses a Workspace without "
                "resource.instanceType: set spec.kaito.instanceType on the InferenceCluster, "
                "or spec.provider.overrides.resource.instanceType"
            )
        if not kaito.node_auto_provisioning and override is not None:
            return (
                "KAITO runs on existing nodes there (InferenceCluster "
                "spec.kaito.nodeAutoProvisioning: false) and its admission webhook refuses "
                "resource.instanceType: remove spec.provider.overrides.resource.instanceType"
            )
        return None

    def for_cluster(self, workload: Workload, cluster: InferenceCluster) -> Workload:
        kaito = cluster.spec.kaito
        if kaito.node_auto_provisioning and kaito.instance_type is not None:
            # An override still wins: it is merged over the Workspace.
            return workload._replace(instance_type=kaito.instance_type)
        return workload

    def render(self, workload: Workload) -> Rendered:
        parts = [RemotePart(WORKSPACE_PART, workspace(workload), condition_query(READY_CONDITION))]
        notes: tuple[str, ...] = ()
        if workload.engine.type != "llamacpp":
            config, notes = preset_config(workload)
            parts.insert(0, RemotePart(CONFIG_PART, config))
        return Rendered(
            parts=tuple(parts),
            backend_ref={
                "group": "",
                "kind": "Service",
                "name": workspace_name(workload),
                "port": SERVICE_PORT,
            },
            notes=notes,
        )

    def ready_replicas(self, observed: Mapping[str, Observed], replicas: int) -> int:
        return pods.all_or_none(observed, WORKSPACE_PART, READY_CONDITION, replicas)
