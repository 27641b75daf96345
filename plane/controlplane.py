"""The example fleet on the real control plane: register clusters, apply, wait, print.

Applying is what ``kubectl apply --server-side`` does with examples/fleet,
Secrets first, after creating the namespaces the files name (as a user
would). Nothing here writes an XR's status or a composed object: Crossplane,
the functions and provider-kubernetes do, and this module only reads.
"""

import datetime
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from http.client import HTTPException
from pathlib import Path

from e2e.fleet import EXAMPLE as FLEET
from plane.clusters import Cluster, binary
from plane.crossplane import NAMESPACE
from plane.kube import ApiError, Obj, condition, is_true
from sim.catalog import KIND_ORDER

REPO = Path(__file__).resolve().parents[1]
API = "fleetgate.dev/v1alpha1"
XR_KINDS = KIND_ORDER  # the offline walk's list of the XR kinds, in dependency order
OBJECT = ("kubernetes.m.crossplane.io/v1alpha1", "Object")
REMOTE_IDENTITY = "fleetgate-provider-kubernetes"


def register(cp: Cluster, workload: Cluster) -> None:
    """What a platform team does for a new cluster: an identity there, its kubeconfig here.

    The identity is a ServiceAccount bound to cluster-admin on the workload
    cluster (provider-kubernetes applies CRD-backed objects of many kinds); the
    ClusterProviderConfig is named after the cluster, as examples/fleet expects.
    """
    w = workload.admin
    w.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": REMOTE_IDENTITY, "namespace": "kube-system"},
        }
    )
    w.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": REMOTE_IDENTITY},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": REMOTE_IDENTITY, "namespace": "kube-system"}
            ],
        }
    )
    kubeconfig = workload.kubeconfig_text_for_token(w.token_for("kube-system", REMOTE_IDENTITY))
    secret = f"{workload.name}-kubeconfig"
    cp.admin.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": secret, "namespace": NAMESPACE},
            "stringData": {"kubeconfig": kubeconfig},
        }
    )
    cp.admin.apply(
        {
            "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
            "kind": "ClusterProviderConfig",
            "metadata": {"name": workload.name},
            "spec": {
                "credentials": {
                    "source": "Secret",
                    "secretRef": {"namespace": NAMESPACE, "name": secret, "key": "kubeconfig"},
                }
            },
        }
    )


# What a user runs to apply the example fleet, as `make up` prints it (with its
# kubectl wrapper) and as `make e2e` runs it: the same words.
APPLY = ("apply", "--server-side", "-f", f"{FLEET.relative_to(REPO)}/")
WATCH = ("get", "ic,ig,md,me,ms,mr", "-A")


def namespaces(cp: Cluster, docs: list[Obj]) -> list[str]:
    """Create the namespaces ``docs`` live in, as a platform team would first; their names."""
    found = sorted({d["metadata"].get("namespace", "") for d in docs} - {""})
    for namespace in found:
        cp.admin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    return found


def apply(cp: Cluster) -> None:
    """Apply the example fleet with the command `make up` prints."""
    kubectl(cp, *APPLY, check=True)


def xrs(cp: Cluster) -> Iterator[Obj]:
    for kind in XR_KINDS:
        yield from cp.admin.list(API, kind)


def name_of(obj: Obj) -> str:
    meta = obj["metadata"]
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj['kind']} {where}{meta['name']}"


def loose_tiers(cp: Cluster) -> list[str]:
    """Each ModelRoute whose priority tiers Envoy Gateway did not make strict (its
    StrictTiers condition, read from the EnvoyPatchPolicy status Envoy Gateway wrote)."""
    loose = []
    for route in cp.admin.list(API, "ModelRoute"):
        cond = condition(route, "StrictTiers") or {}
        if cond.get("status") != "True":
            loose.append(
                f"{name_of(route)}: StrictTiers {cond.get('status')} {cond.get('message', '')}"
            )
    return loose


def not_converged(cp: Cluster, excluded: Callable[[Obj], bool] = lambda _: False) -> list[str]:
    """What still keeps the fleet from being converged, one line each; empty when it is.
    XRs, services and Objects that are ``excluded`` are not judged (bad input beside it)."""
    problems = []
    seen = dict.fromkeys(XR_KINDS, 0)

    def judged(obj: Obj) -> bool:
        return not excluded(obj)

    for xr in filter(judged, xrs(cp)):
        seen[xr["kind"]] += 1
        for type_ in ("Synced", "Ready"):
            if not is_true(xr, type_):
                cond = condition(xr, type_) or {}
                problems.append(
                    f"{name_of(xr)}: {type_} {cond.get('status', 'absent')}"
                    f" {cond.get('reason', '')} {cond.get('message', '')}".rstrip()
                )
    for svc in filter(judged, cp.admin.list(API, "ModelService")):
        if not is_true(svc, "RoutingReady"):
            cond = condition(svc, "RoutingReady") or {}
            problems.append(f"{name_of(svc)}: RoutingReady {cond.get('message', 'absent')}")
        # Routed is not enough: an endpoint that turned ready must have joined.
        endpoints = (svc.get("status") or {}).get("endpoints") or {}
        # A sleeping endpoint (scaled to zero) is out of the route on purpose.
        if endpoints.get("ready", 0) + endpoints.get("asleep", 0) != endpoints.get("total"):
            problems.append(
                f"{name_of(svc)}: {endpoints.get('ready')} of {endpoints.get('total')}"
                " selected endpoints routed"
            )
    for obj in filter(judged, cp.admin.list(*OBJECT)):
        for type_ in ("Synced", "Ready"):
            if not is_true(obj, type_):
                cond = condition(obj, type_) or {}
                reason, message = cond.get("reason", "absent"), cond.get("message", "")
                problems.append(f"{name_of(obj)}: {type_} {reason} {message}")
    for kind in ("InferenceCluster", "InferenceGateway", "ModelDeployment", "ModelService"):
        if not seen[kind]:
            problems.append(f"no {kind} on the control plane")
    return problems


def converge(
    cp: Cluster,
    timeout: float,
    echo: bool = True,
    excluded: Callable[[Obj], bool] = lambda _: False,
    interval: float = 2.0,
) -> float:
    """Wait until nothing is left in ``not_converged``, asking every ``interval`` seconds;
    seconds it took. Fails with what is left."""
    start = time.monotonic()
    last: list[str] = []
    next_report = start + 30
    while True:
        try:
            problems = not_converged(cp, excluded)
        except (ApiError, OSError, HTTPException) as err:  # too busy to answer in time: asked again
            problems = [f"the control plane's API server did not answer: {err}"]
        if not problems:
            return time.monotonic() - start
        if time.monotonic() > start + timeout:
            raise TimeoutError(
                f"the fleet did not converge in {timeout:.0f}s; still:\n  " + "\n  ".join(problems)
            )
        if echo and time.monotonic() > next_report and problems != last:
            print(f"  {time.monotonic() - start:6.1f}s  waiting on {len(problems)}: {problems[0]}")
            next_report = time.monotonic() + 30
            last = problems
        time.sleep(interval)


def readiness_timeline(cp: Cluster, applied_at: float) -> list[tuple[float, str]]:
    """When each XR and Object last turned Ready, in seconds after ``applied_at`` (epoch).

    Read from each Ready condition's lastTransitionTime (whole seconds, as the
    API server keeps them), so the chain of hops from the first apply to the
    last route shows where the time goes.
    """
    found = []
    for obj in [*xrs(cp), *cp.admin.list(*OBJECT)]:
        cond = condition(obj, "Ready") or {}
        if cond.get("status") == "True" and cond.get("lastTransitionTime"):
            at = datetime.datetime.fromisoformat(cond["lastTransitionTime"]).timestamp()
            label = name_of(obj)
            if obj["kind"] == "Object":
                remote = obj["spec"]["forProvider"]["manifest"]
                owner = (obj["metadata"].get("labels") or {}).get("crossplane.io/composite", "")
                label = f"{remote['kind']} {remote['metadata']['name']} (Object of {owner})"
            found.append((at - applied_at, label))
    return sorted(found)


def kubectl(cluster: Cluster, *args: str, check: bool = False) -> str:
    """What ``kubectl <args>`` says, errors included (printed as they are); with ``check``
    a failure raises instead. Paths are the repository's, as a user types them."""
    done = subprocess.run(
        [binary("kubectl"), f"--kubeconfig={cluster.admin_kubeconfig}", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed: {done.stdout}{done.stderr}")
    return done.stdout + done.stderr


def secrets_at_rest(cluster: Cluster, needles: dict[str, str]) -> list[str]:
    """Where, outside Secrets, any object of any kind the API server lists holds a value.

    One line per object and field, e.g. ``Object team-a/x spec.forProvider.manifest.data.apiKey
    holds the value of Secret team-a/openai apiKey (base64)``; annotations such as
    last-applied-configuration are searched as the text they are.
    """
    hits = []
    for obj in cluster.admin.every_object("Secret"):
        if not any(needle in json.dumps(obj) for needle in needles):
            continue  # the common case, decided in one pass
        for field, text in _strings(obj):
            for needle, origin in needles.items():
                if needle in text:
                    hits.append(f"{name_of(obj)} {field} holds the value of {origin}")
    return hits


def _strings(value: object, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string in a decoded JSON value with its dotted path (and each key, as text)."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            yield where, str(key)
            yield from _strings(item, where)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")
    elif isinstance(value, str):
        yield path, value
