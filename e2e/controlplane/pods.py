"""A pod that Envoy Gateway provisions on a workload cluster, run here as processes.

Envoy Gateway creates Deployments in its namespace (the rate-limit service,
each Gateway's Envoy); no kubelet runs their pods, so the plane runs each
pod's container itself, from the Deployment *as Envoy Gateway wrote it on the
cluster*: its command and arguments, its environment with the downward API
filled as a kubelet fills it, its user, and a root directory holding what
the pod mounts (Secret and ConfigMap volumes read from the cluster, with the
volumes' modes) and a hosts file that leads the pod's hostnames to loopback.
What a pod sees that this does not give it is a defect of the stand-in.
"""

import base64
import re
import shutil
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path

from e2e.controlplane.clusters import Cluster
from e2e.controlplane.kube import Obj, mount_secret, wait_for

MOUNT_TIMEOUT_S = 180.0
# Kubernetes expands $(VAR) in a container's command and arguments from its environment
# and leaves an unknown reference as written; $$ escapes a dollar (third_party/forked/
# golang/expansion/expand.go, k8s.io/kubernetes v1.35).
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def env(container: Obj, namespace: str, pod_name: str) -> dict[str, str]:
    """The container's environment, the downward API as the pod would fill it: its
    namespace, its name, and an annotation it does not carry as the empty string."""
    filled: dict[str, str] = {}
    pod_fields = {"metadata.namespace": namespace, "metadata.name": pod_name}
    for var in container.get("env") or []:
        if "value" in var:
            filled[var["name"]] = str(var["value"])
            continue
        path = ((var.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath", "")
        if path in pod_fields:
            filled[var["name"]] = pod_fields[path]
        elif path.startswith("metadata.annotations["):
            filled[var["name"]] = ""
        else:
            raise ValueError(f"{pod_name}: cannot fill {var['name']} from {var.get('valueFrom')}")
    return filled


def expand(args: Sequence[str], environment: Mapping[str, str]) -> list[str]:
    """``args`` with each $(VAR) replaced as the kubelet replaces it."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        return environment.get(name, match.group(0))

    return [_REFERENCE.sub(one, arg) for arg in args]


def host_port(url: str, what: str) -> tuple[str, int]:
    """``host:port`` (how Envoy Gateway writes the addresses it hands its pods)."""
    parsed = urllib.parse.urlsplit(url if "//" in url else f"//{url}")
    if parsed.hostname is None or parsed.port is None:
        raise ValueError(f"{what}: {url!r} is not host:port")
    return parsed.hostname, parsed.port


def which(command: str) -> str:
    found = shutil.which(command)
    if found is None:
        raise FileNotFoundError(f"{command} is not installed")
    return found


def user(pod: Obj, container: Obj) -> str:
    """``chroot``'s --userspec for the pod's user (root when the spec names none)."""
    security = {**(pod.get("securityContext") or {}), **(container.get("securityContext") or {})}
    return f"--userspec={security.get('runAsUser', 0)}:{security.get('runAsGroup', 0)}"


def root(
    workload: Cluster, namespace: str, pod: Obj, container: Obj, *, into: Path, hosts: Sequence[str]
) -> Path:
    """A root directory at ``into`` holding what ``container`` mounts, with the volumes'
    modes, ``/tmp`` and a hosts file leading ``hosts`` to 127.0.0.1."""
    kube = workload.admin
    for mount in container.get("volumeMounts") or []:
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        at = into / mount["mountPath"].lstrip("/")
        if "secret" in volume:
            source = volume["secret"]
            mount_secret(kube, namespace, source["secretName"], at, "Envoy Gateway's certgen")
        elif "configMap" in volume:
            source = volume["configMap"]
            _mount_config_map(workload, namespace, source, at)
        else:
            raise ValueError(f"{pod}: volume {volume['name']} is of a kind not mounted here")
        # A Secret or ConfigMap volume's files have its defaultMode (0644 unless set),
        # which the container's non-root user needs to read them.
        for path in at.iterdir():
            path.chmod(int(source.get("defaultMode", 0o644)))
    for folder in ("tmp", "etc", "bin"):
        (into / folder).mkdir(parents=True, exist_ok=True)
    (into / "tmp").chmod(0o1777)
    (into / "etc" / "hosts").write_text(f"127.0.0.1 localhost {' '.join(hosts)}\n")
    return into


def _mount_config_map(workload: Cluster, namespace: str, source: Obj, into: Path) -> None:
    """A ConfigMap volume: its keys (or the items it names) as files; an optional one
    absent leaves it empty."""
    name = source["name"]
    if source.get("optional"):
        found = workload.admin.get("v1", "ConfigMap", name, namespace)
    else:
        found = wait_for(
            f"ConfigMap {namespace}/{name}",
            lambda: workload.admin.get("v1", "ConfigMap", name, namespace),
            MOUNT_TIMEOUT_S,
        )
    into.mkdir(parents=True, exist_ok=True)
    files: dict[str, bytes] = {
        key: text.encode() for key, text in ((found or {}).get("data") or {}).items()
    }
    for key, value in ((found or {}).get("binaryData") or {}).items():
        files[key] = base64.b64decode(value)
    items = source.get("items")
    paths = {i["key"]: i["path"] for i in items} if items else {k: k for k in files}
    for key, path in paths.items():
        (into / path).write_bytes(files[key])
