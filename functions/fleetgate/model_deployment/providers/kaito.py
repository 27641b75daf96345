"""KAITO: a ``kaito.sh/v1beta1`` InferenceSet runs the replicas; a Service fronts them all.

At KAITO v0.12.0 one Workspace is one inference instance: its
``resource.count`` is a deprecated node count (api/v1beta1/workspace_types.go:
27-31), read as the node estimate's "requested" nodes for vLLM and as the
StatefulSet's pod count otherwise (pkg/utils/workspace/helper.go:43-47,
pkg/workspace/controllers/workspace_controller.go:1506-1522), while the
Workspace's Service sends every request to pod 0 (pkg/workspace/manifests/
manifests.go:66-72). A Workspace has no scale subresource (workspace_types.go:
285-297). Replicas are an InferenceSet's ``spec.replicas`` (api/v1beta1/
inferenceset_types.go:128-132, with the scale subresource at :179): its
controller keeps that many child Workspaces, each created from
``spec.template`` (pkg/inferenceset/inferenceset_controller.go:318-387,
pkg/utils/inferenceset/inferenceset.go:133-180).

Two ways to run, by engine, in the template's ``inference``:

* **vLLM on GPUs** through KAITO's preset for the model (``inference.preset``):
  KAITO picks the image and starts vLLM. The served model name and the user's
  engine flags reach vLLM through a ConfigMap KAITO reads
  (``inference.config``, key ``inference_config.yaml``, section ``vllm``): a
  preset's container is KAITO's, so Fleetgate cannot put its variable there.
* **llama.cpp (GGUF) on CPU or GPU** through a pod template
  (``inference.template``) running the llama.cpp server, model and served name
  on its command line like Dynamo's workers.

KAITO serves on container port 5000 of each Workspace's pod 0, whichever way it
runs. Its per-Workspace Services are named by the API server (``generateName``,
inferenceset.go:160), so the route targets a Service of Fleetgate's selecting
what KAITO's own InferencePool for an InferenceSet selects: the pods labelled
with the InferenceSet's name, index 0 only (manifests.go:420-431, 463-467).

**What KAITO never changes on a running replica.** The InferenceSet's webhook
lets ``spec.template`` and ``spec.labelSelector`` change
(api/v1beta1/inferenceset_validation.go:75-83), but its controller reads the
template only when it creates a Workspace (inferenceset_controller.go:365-387;
existing ones get labels alone, :389-426), and a Workspace's own webhook
refuses later changes to ``resource.count``, ``resource.labelSelector``,
``resource.instanceType`` and ``inference.preset``
(api/v1beta1/workspace_validation.go:780-823, 889-901). vLLM's ConfigMap is
read once too: mounted as a file at the pod's start
(pkg/workspace/inference/preset_inferences.go:528-536), and by the node
estimate only while a Workspace has none (workspace_controller.go:1484-1503).
So everything but ``spec.replicas`` is a revision: the InferenceSet and its
ConfigMap are named after a digest of it, a change replaces them (Crossplane
deletes the old composed Objects, KAITO's finalizer deletes their Workspaces:
inferenceset_controller.go:126-170), and no update is ever refused or silently
left unapplied. Replicas scale in place. A replacement is a restart: the
cluster's endpoint is withheld until the new set serves, as for any workload
not ready yet.

KAITO's admission webhook judges ``resource.instanceType`` by whether it
provisions nodes itself (api/v1beta1/inferenceset_validation.go:105-124, and
the child Workspace's create checks it runs on every InferenceSet,
:54-56 and workspace_validation.go:172-184, v0.12.0): with node
auto-provisioning on, KAITO's default (charts/kaito/workspace/values.yaml:41,
pkg/featuregates/featuregates.go:29), an InferenceSet without one is refused;
with it off (bring your own nodes), one with it is. Which way a cluster runs is
its InferenceCluster's ``spec.kaito``; a deployment the cluster's KAITO would
refuse is not placed there, and ``Scheduled`` says which field to set.
"""

import json
from collections.abc import Mapping
from typing import Annotated, Any, NamedTuple, Self

from pydantic import BaseModel, Field, ValidationInfo, model_validator

from fleetgate.core import names
from fleetgate.core.kinds.cluster import InferenceCluster
from fleetgate.core.models import ServingProvider
from fleetgate.core.observed import Observed
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
SERVER_PORT = 5000  # where every KAITO engine pod listens, preset or template
SERVICE_PORT = 80
CONFIG_KEY = "inference_config.yaml"
INFERENCESET_PART = "inferenceset"  # + "-<revision>"
CONFIG_PART = "config"  # + "-<revision>"
SERVICE_PART = "service"
# Set by KAITO on every pod of an InferenceSet's Workspaces (manifests.go:140-145
# for presets, :300-306 for templates); the index label by the StatefulSet controller.
CREATED_BY = "inferenceset.kaito.sh/created-by"
POD_INDEX = "apps.kubernetes.io/pod-index"
# KAITO names a Workspace's StatefulSet, Services and pods after it; a child
# Workspace is ``<inferenceset>-`` plus the API server's 5 random characters.
WORKSPACE_MAX = 40
INFERENCESET_MAX = WORKSPACE_MAX - len("-abcde")
# Serving while at least one replica is: ``status.readyReplicas`` counts the
# Workspaces whose WorkspaceSucceeded is True (inferenceset_controller.go:177-191,
# 429-434; pkg/workspace/controllers/metrics.go:173-190). It carries no
# generation, and needs none: the only field changed in place is spec.replicas,
# and a count of running Workspaces is true whatever their number should be.
# InferenceSetReady waits for all of them (:485-497), which would withdraw the
# cluster's endpoint whenever it scales up; status.replicas is the desired
# count, not the running one (:433).
SERVING_QUERY = (
    "(has(object.spec) && has(object.spec.replicas) && object.spec.replicas < 1) || "
    "(has(object.status) && has(object.status.readyReplicas) && object.status.readyReplicas > 0)"
)
GPU_NODES = {"nvidia.com/gpu.present": "true"}


class Revision(NamedTuple):
    """What KAITO takes only when it creates a replica's Workspace, and its digest."""

    selector: Manifest  # spec.labelSelector: each Workspace's resource.labelSelector
    template: Manifest  # spec.template, inference.config not yet named
    config: Manifest | None  # the vLLM section of the preset's ConfigMap
    notes: tuple[str, ...]
    digest: str


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


def preset_flags(workload: Workload) -> tuple[Manifest, tuple[str, ...]]:
    """vLLM's flags for the preset's ConfigMap (served model name, the user's), and notes."""
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
    return {"vllm": dict(sorted(flags.items()))}, notes


def revision(workload: Workload) -> Revision:
    """Everything but the replica count, with the team's overrides in, and its digest."""
    config: Manifest | None = None
    notes: tuple[str, ...] = ()
    inference: Manifest
    if workload.engine.type == "llamacpp":
        pod = {
            "metadata": {"labels": {**workload.labels, **workload.selector}},
            "spec": pods.pod_spec(template_engine(workload)),
        }
        inference = {"template": pod}
    else:
        config, notes = preset_flags(workload)
        inference = {"preset": {"name": workload.model}}
    resource: Manifest = {}
    if workload.instance_type is not None:
        resource["instanceType"] = workload.instance_type
    # The team's overrides are a Workspace's roots (``resource``, ``inference``):
    # the InferenceSet holds them in its template, but the node selector at the top.
    given = upstream(workload.overrides)
    wanted = dict(given.get("resource", {}))
    selector = merge(node_selector(workload), wanted.pop("labelSelector", {}))
    template = merge(
        {"resource": resource, "inference": inference},
        {"resource": wanted, "inference": given.get("inference", {})},
    )
    whole = {"labelSelector": selector, "template": template, "config": config}
    digest = names.digest(json.dumps(whole, sort_keys=True, separators=(",", ":")))
    return Revision(selector, template, config, notes, digest)


def inferenceset_name(workload: Workload, digest: str) -> str:
    return f"{naming.fitted(workload.name, INFERENCESET_MAX - len(digest) - 1)}-{digest}"


def service_name(workload: Workload) -> str:
    # Not the workload's own name: KAITO named the Service of the Workspace
    # Fleetgate composed before InferenceSets that, and owns (and deletes) it
    # while that Workspace goes.
    return workload.child("kaito")


def config_map(workload: Workload, name: str, vllm: Manifest) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": pods.metadata(workload, name),
        # JSON is YAML, and keeps the function free of a YAML dependency.
        "data": {CONFIG_KEY: json.dumps(vllm, indent=2) + "\n"},
    }


def inference_set(workload: Workload, name: str, rev: Revision, config: str | None) -> Manifest:
    template = rev.template
    if config is not None:
        template = merge(template, {"inference": {"config": config}})
    return {
        "apiVersion": API_VERSION,
        "kind": "InferenceSet",
        "metadata": pods.metadata(workload, name),
        "spec": {
            "replicas": workload.replicas,
            "labelSelector": rev.selector,
            "template": template,
        },
    }


def service(workload: Workload, inferenceset: str) -> Manifest:
    """Every replica's serving pod: what KAITO's own InferencePool for the set selects."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": pods.metadata(workload, service_name(workload)),
        "spec": {
            # Pod 0 of each Workspace serves; the others are its multi-node
            # workers (manifests.go:426-431, as KAITO's Service: :70-72).
            "selector": {CREATED_BY: inferenceset, POD_INDEX: "0"},
            "ports": [
                {"name": "http", "port": SERVICE_PORT, "targetPort": SERVER_PORT, "protocol": "TCP"}
            ],
        },
    }


def instance_type_override(workload: Workload) -> str | None:
    """``spec.provider.overrides.resource.instanceType``, if given."""
    decoded = workload.overrides
    if isinstance(decoded, KAITOOverrides) and decoded.resource is not None:
        return decoded.resource.instance_type
    return None


def ready_count(observed: Mapping[str, Observed]) -> int:
    """The InferenceSet's ``status.readyReplicas``; 0 while it reports none."""
    # Its part name carries the revision; ``observed`` holds this render's parts only.
    found = [o for part, o in observed.items() if part.startswith(f"{INFERENCESET_PART}-")]
    ready = found[0].remote.get("status", "readyReplicas") if found else None
    # Numbers arrive as floats: a protobuf Struct has no integers.
    if isinstance(ready, bool) or not isinstance(ready, int | float) or ready < 0:
        return 0
    return int(ready)


# --- overrides: a Workspace's own roots, as each replica's Workspace gets them ------


class ResourceOverride(Strict):
    """Which nodes KAITO uses or provisions.

    No ``count``: sizing comes from spec.replicas. No ``preferredNodes``: an
    InferenceSet has no place for it (inferenceset_types.go:21-33), and it is
    deprecated (workspace_types.go:42-46).
    """

    instance_type: Annotated[str, Field(min_length=1, max_length=253)] | None = None
    label_selector: LabelSelector | None = None


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
    scales: bool = True

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
                "KAITO's default) and its admission webhook refuses an InferenceSet without "
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
            # An override still wins: it is merged over the template.
            return workload._replace(instance_type=kaito.instance_type)
        return workload

    def render(self, workload: Workload) -> Rendered:
        rev = revision(workload)
        name = inferenceset_name(workload, rev.digest)
        # The revision is in the part names too: a renamed manifest under the
        # same composed resource would leave the old object on the cluster.
        parts = []
        config = None
        if rev.config is not None:
            config = f"{name}-config"
            manifest = config_map(workload, config, rev.config)
            parts.append(RemotePart(f"{CONFIG_PART}-{rev.digest}", manifest))
        parts += [
            RemotePart(
                f"{INFERENCESET_PART}-{rev.digest}",
                inference_set(workload, name, rev, config),
                SERVING_QUERY,
                # Through the InferenceSet's scale subresource (spec.replicas).
                scaled=True,
            ),
            RemotePart(SERVICE_PART, service(workload, name)),
        ]
        return Rendered(
            parts=tuple(parts),
            backend_ref={
                "group": "",
                "kind": "Service",
                "name": service_name(workload),
                "port": SERVICE_PORT,
            },
            notes=rev.notes,
        )

    def ready_replicas(self, observed: Mapping[str, Observed], replicas: int) -> int:
        return ready_count(observed)
