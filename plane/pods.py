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
import ipaddress
import itertools
import re
import shutil
import subprocess
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path

from plane.clusters import Cluster
from plane.kube import Obj, wait_for

MOUNT_TIMEOUT_S = 180.0
# Kubernetes expands $(VAR) in a container's command and arguments from its environment
# and leaves an unknown reference as written; $$ escapes a dollar (third_party/forked/
# golang/expansion/expand.go, k8s.io/kubernetes v1.35).
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


# A pod that serves its Service to an API server (a webhook) needs an address the API server
# dials, and an EndpointSlice may not name a loopback one: each such pod gets one of this
# range on the plane's own loopback (the plane runs in a network namespace of its own).
POD_NETWORK = ipaddress.ip_network("10.244.0.0/16")
_next_pod = itertools.count(2)


def address() -> str:
    """A pod address of its own, on the plane's loopback."""
    ip = str(POD_NETWORK[next(_next_pod)])
    subprocess.run(["ip", "address", "add", f"{ip}/32", "dev", "lo"], check=True)
    return ip


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
    modes, ``/tmp`` and a hosts file leading ``hosts`` to 127.0.0.1. Containers of one
    pod may share a root: each adds its mounts."""
    for mount, volume in _mounts(pod, container):
        _mount(workload, namespace, volume, into / mount["mountPath"].lstrip("/"), wait=True)
    for folder in ("tmp", "etc", "bin"):
        (into / folder).mkdir(parents=True, exist_ok=True)
    (into / "tmp").chmod(0o1777)
    (into / "etc" / "hosts").write_text(f"127.0.0.1 localhost {' '.join(hosts)}\n")
    return into


def refresh(
    workload: Cluster, namespace: str, pod: Obj, containers: Sequence[Obj], into: Path
) -> None:
    """The Secret and projected volumes of ``containers`` written again from the cluster, as
    the kubelet syncs a running pod's volumes: a file changes in place (a rename, so a reader
    never sees half of it), and a key gone from an optional source goes."""
    for container in containers:
        for mount, volume in _mounts(pod, container):
            if "secret" in volume or "projected" in volume:
                at = into / mount["mountPath"].lstrip("/")
                _mount(workload, namespace, volume, at, wait=False)


def _mounts(pod: Obj, container: Obj) -> list[tuple[Obj, Obj]]:
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    return [(m, volumes[m["name"]]) for m in container.get("volumeMounts") or []]


def _mount(workload: Cluster, namespace: str, volume: Obj, at: Path, *, wait: bool) -> None:
    if "emptyDir" in volume:
        at.mkdir(parents=True, exist_ok=True)
        at.chmod(0o777)  # as the kubelet makes one: any container's user may write
        return
    if "secret" in volume:
        source = volume["secret"]
        files = _source_files(workload, namespace, "Secret", source, wait=wait)
    elif "configMap" in volume:
        source = volume["configMap"]
        files = _source_files(workload, namespace, "ConfigMap", source, wait=wait)
    elif "projected" in volume:
        source = volume["projected"]
        files = {}
        for part in source["sources"]:
            if "secret" not in part:
                raise ValueError(f"projected volume {volume['name']}: {part} is not mounted here")
            secret = part["secret"]
            files |= _source_files(workload, namespace, "Secret", secret, wait=wait)
    else:
        raise ValueError(f"volume {volume['name']} is of a kind not mounted here")
    # A volume's files have its defaultMode (0644 unless set), which the container's
    # non-root user needs to read them.
    _write(at, files, int(source.get("defaultMode", 0o644)))


def _source_files(
    workload: Cluster, namespace: str, kind: str, source: Obj, *, wait: bool
) -> dict[str, bytes]:
    """The files one Secret or ConfigMap gives a volume (its keys, or the items it names);
    an optional one absent gives none. A required one is waited for, filled, when ``wait``."""
    kube = workload.admin
    name = source.get("secretName") or source["name"]

    def found() -> Obj | None:
        obj = kube.get("v1", kind, name, namespace)
        return obj if obj and (obj.get("data") or obj.get("binaryData")) else None

    if source.get("optional") or not wait:
        obj = kube.get("v1", kind, name, namespace) or {}
    else:
        obj = wait_for(f"{kind} {namespace}/{name} to be filled", found, MOUNT_TIMEOUT_S)
    data: dict[str, bytes] = {
        key: base64.b64decode(value) if kind == "Secret" else value.encode()
        for key, value in (obj.get("data") or {}).items()
    }
    for key, value in (obj.get("binaryData") or {}).items():
        data[key] = base64.b64decode(value)
    items = source.get("items")
    paths = {i["key"]: i["path"] for i in items} if items else {k: k for k in data}
    return {path: data[key] for key, path in paths.items() if key in data}


def write_hosts(into: Path, names: Mapping[str, str]) -> None:
    """The hosts file of the root at ``into``: its first line (loopback, the pod's own
    names) and ``names`` (name -> address), as the cluster's DNS would answer them."""
    path = into / "etc" / "hosts"
    base = path.read_text().splitlines()[0]
    lines = [base, *(f"{address} {name}" for name, address in sorted(names.items()))]
    content = "\n".join(lines) + "\n"
    if path.read_text() != content:
        staged = path.with_name(".hosts.new")
        staged.write_text(content)
        staged.chmod(0o644)
        staged.replace(path)


def _write(at: Path, files: Mapping[str, bytes], mode: int) -> None:
    at.mkdir(parents=True, exist_ok=True)
    for path, content in files.items():
        target = at / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_file() and target.read_bytes() == content:
            continue
        staged = target.with_name(f".{target.name}.new")
        staged.write_bytes(content)
        staged.chmod(mode)
        staged.replace(target)
    for old in [p for p in at.rglob("*") if p.is_file()]:
        if old.relative_to(at).as_posix() not in files:
            old.unlink()
