"""Names this function derives: on the workload clusters, on the control plane, in the pipeline.

Every deployment lands in the same namespace (``fleetgate-system``) of a
cluster, so a remote name must tell ``team-a/qwen`` from ``team-b/qwen`` and
from ``team/a-qwen``. ``<namespace>.<name>`` is unambiguous (a namespace
holds no dot); hashing it keeps the name a DNS-1035 label (a Service name)
however long the inputs are.
"""

from fleetgate.core import names


def workload(namespace: str, name: str) -> str:
    """The deployment's name on every cluster: engine Deployment, Service, pool, route.

    Starts with a letter (``md-``) because a Service name must; always carries
    the hash because ``<namespace>.<name>`` is never a label as it stands.
    """
    return names.dns_label(f"md-{namespace}.{name}")


def endpoint(deployment: str, cluster: str) -> str:
    """The ModelEndpoint of ``deployment`` for ``cluster``, in the deployment's namespace.

    A DNS label: the cluster label ends in a hash of the cluster name, so
    (deployment, cluster) pairs never meet, and the result stays ≤ 63.
    """
    return names.dns_label(deployment, names.cluster_label(cluster))


def resource_prefix(cluster: str) -> str:
    """What every composition resource name of ``cluster`` starts with."""
    return f"{names.cluster_label(cluster)}-"


def resource(cluster: str, part: str) -> str:
    """The composition resource name of ``part`` (engine, route, endpoint, …) on ``cluster``."""
    return names.resource_key(resource_prefix(cluster), part)


def fitted(label: str, limit: int) -> str:
    """``label`` cut to ``limit`` characters, still unique: a cut label gains a hash of the whole.

    For upstream operators that derive longer names from the one given (a
    Dynamo component's Deployment is ``<graph>-<component>``, a RayCluster's
    head Service ``<cluster>-head-svc``), which must stay DNS labels.
    """
    if len(label) <= limit:
        return label
    suffix = names.digest(label)
    return f"{label[: limit - len(suffix) - 1].rstrip('-')}-{suffix}"
