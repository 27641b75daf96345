"""schemas.validate against the real ``crossplane beta validate`` and the pinned CRD set.

Nothing here skips: a missing Crossplane CLI or CRD set makes these tests fail.
Each case lists the errors it wants; each entry is the set of words that one
error line must all contain, and there must be exactly that many errors.
"""

from collections import Counter
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from schemas import crds, validate

Obj = dict[str, Any]


@pytest.fixture(scope="session")
def crd_dir() -> Path:
    return crds.fetch()


def certificate(**spec: Any) -> Obj:
    base: Obj = {
        "secretName": "api-tls",
        "dnsNames": ["api.example.com"],
        "issuerRef": {"name": "fleet-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"},
        "privateKey": {"algorithm": "ECDSA", "size": 256},
    }
    base.update(spec)
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "api", "namespace": "fleet"},
        "spec": base,
    }


def gateway(**listener: Any) -> Obj:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "edge", "namespace": "gateways"},
        "spec": {
            "gatewayClassName": "envoy",
            "listeners": [{"name": "http", "port": 80, "protocol": "HTTP", **listener}],
        },
    }


def wrapped(manifest: Obj, name: str = "edge-gateway") -> Obj:
    """A provider-kubernetes Object (namespaced API) carrying ``manifest`` to a remote cluster."""
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {"name": name, "namespace": "fleet"},
        "spec": {
            "forProvider": {"manifest": manifest},
            "providerConfigRef": {"name": "cluster-a", "kind": "ClusterProviderConfig"},
        },
    }


def config_map(**extra: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "routes", "namespace": "fleet"},
        "data": {"routes.yaml": "[]"},
        **extra,
    }


def secret(data: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "keys", "namespace": "fleet"},
        "type": "Opaque",
        "data": data,
    }


def deployment(containers: list[Obj]) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "engine", "namespace": "fleet"},
        "spec": {
            "selector": {"matchLabels": {"app": "engine"}},
            "template": {
                "metadata": {"labels": {"app": "engine"}},
                "spec": {"containers": containers},
            },
        },
    }


def without_name(obj: Obj) -> Obj:
    copy = deepcopy(obj)
    del copy["metadata"]["name"]
    return copy


def with_metadata(obj: Obj, **meta: Any) -> Obj:
    copy = deepcopy(obj)
    copy["metadata"].update(meta)
    return copy


def http_route(path: str) -> Obj:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "models", "namespace": "gateways"},
        "spec": {
            "parentRefs": [{"name": "edge"}],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": path}}]}],
        },
    }


@dataclass
class Case:
    objects: list[Obj]
    want: list[tuple[str, ...]] = field(default_factory=list)


CASES = {
    "valid certificate": Case([certificate()]),
    # The CLI reads YAML 1.1: a plain y, n or off would reach it as a boolean.
    "strings YAML 1.1 reads as booleans": Case(
        [
            {
                **certificate(secretName="y", dnsNames=["n"]),
                "metadata": {"name": "y", "namespace": "n"},
            }
        ]
    ),
    # go-yaml reads a plain scalar Go's ParseInt or its float syntax takes as a number.
    "strings go-yaml reads as numbers": Case(
        [certificate(secretName="1e5", dnsNames=["0o17", "0B101", "1_000", "-2.5e-3"])]
    ),
    "unknown field in certificate": Case(
        [certificate(renewBeforePercentage=10, secretNam="typo")],
        [("objects[0] Certificate fleet/api", "spec.secretNam", 'unknown field: "secretNam"')],
    ),
    "wrong enum": Case(
        [certificate(privateKey={"algorithm": "DSA"})],
        [("objects[0] Certificate", "spec.privateKey.algorithm", "Unsupported value", '"DSA"')],
    ),
    "missing required field": Case(
        [certificate(secretName=None)],
        [("objects[0] Certificate", "spec.secretName")],
    ),
    "CEL rule of the gateway api": Case(
        [http_route("models")],
        [("objects[0] HTTPRoute gateways/models", "CEL rule", "absolute path")],
    ),
    "valid object wrapping a valid gateway": Case([wrapped(gateway())]),
    "object wrapping a gateway with an unknown field": Case(
        [wrapped(gateway(tls_mode="x"))],
        [
            (
                "objects[0] Object fleet/edge-gateway (kubernetes.m.crossplane.io/v1alpha1)",
                "spec.forProvider.manifest: Gateway gateways/edge",
                'unknown field: "tls_mode"',
            )
        ],
    ),
    "object wrapping a core kind with an unknown field": Case(
        [wrapped(config_map(spec={}), name="routes")],
        [("Object fleet/routes", "manifest: ConfigMap fleet/routes", 'unknown field: "spec"')],
    ),
    # The API server stores a key with no value (a projected Secret's first
    # version, core/secrets.py); what is not base64 it refuses.
    "secret with a key holding no value": Case([wrapped(secret({"k": "", "l": "eA=="}))]),
    "secret with a value that is not base64": Case(
        [wrapped(secret({"k": "not base64!"}))],
        [("Object fleet/edge-gateway", "manifest: Secret fleet/keys", "data.k")],
    ),
    "object wrapping a manifest without a name": Case(
        [wrapped(without_name(gateway()))],
        [("Object fleet/edge-gateway", "manifest: Gateway", "metadata.name: Required")],
    ),
    "object with an unknown field of its own": Case(
        [{**wrapped(gateway()), "spec": {**wrapped(gateway())["spec"], "readyness": 1}}],
        [("objects[0] Object fleet/edge-gateway", 'unknown field: "readyness"')],
    ),
    "kind with no CRD": Case(
        [{"apiVersion": "widgets.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}],
        [("objects[0] Widget w (widgets.example.com/v1)", "no schema")],
    ),
    "version with no CRD": Case(
        [{**certificate(), "apiVersion": "cert-manager.io/v1beta7"}],
        [("objects[0] Certificate fleet/api (cert-manager.io/v1beta7)", "no schema")],
    ),
    "core kind outside the allowed list": Case(
        [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "pvc"}}],
        [("objects[0] PersistentVolumeClaim pvc (v1)", "no schema")],
    ),
    "valid core config map": Case([config_map()]),
    "core config map with an unknown field and a number": Case(
        [config_map(spec={}, data={"replicas": 3})],
        [('unknown field: "spec"',), ("data.replicas", "must be of type string")],
    ),
    # Built-in kinds are checked against Kubernetes' own published schema
    # (schemas/coreschemas.py), down to a container's fields.
    "deployment with an unknown container field": Case(
        [deployment(containers=[{"name": "engine", "image": "vllm", "gpus": 1}])],
        [("objects[0] Deployment fleet/engine", "containers[0].gpus", 'unknown field: "gpus"')],
    ),
    "valid deployment with GPUs, probes and an int-or-string port": Case(
        [
            deployment(
                containers=[
                    {
                        "name": "engine",
                        "image": "vllm",
                        "resources": {"limits": {"nvidia.com/gpu": 1, "memory": "16Gi"}},
                        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}},
                        "ports": [{"name": "http", "containerPort": 8000}],
                    }
                ]
            )
        ]
    ),
    "core kind without a name": Case(
        [without_name(config_map())],
        [("objects[0] ConfigMap", "metadata.name: Required value")],
    ),
    "unknown metadata field": Case(
        [with_metadata(certificate(), label={"a": "b"})],
        [("objects[0] Certificate fleet/api", 'metadata.label: unknown field: "label"')],
    ),
    "errors go to the right one of two same-named objects": Case(
        [certificate(), certificate(secretNam="typo"), certificate()],
        [("objects[1] Certificate fleet/api", 'unknown field: "secretNam"')],
    ),
    "object without a kind": Case(
        [{"apiVersion": "v1", "metadata": {"name": "x"}}],
        [("objects[0]", "kind: Required value")],
    ),
}


def matches(errors: list[str], want: list[tuple[str, ...]]) -> bool:
    unclaimed = list(errors)
    for words in want:
        hit = next((e for e in unclaimed if all(w in e for w in words)), None)
        if hit is None:
            return False
        unclaimed.remove(hit)
    return not unclaimed


@pytest.fixture(scope="session")
def errors_by_case(crd_dir: Path) -> dict[str, list[str]]:
    """Validate every case's objects in one call (one CLI run) and split the errors by case.

    Each error starts with ``objects[<index>]``; the index is shifted back to the
    case's own numbering, so the cases read as if validated one by one.
    """
    objects = [obj for case in CASES.values() for obj in case.objects]
    errors = validate.validate(objects, crd_dir=crd_dir)
    by_case: dict[str, list[str]] = {}
    start = 0
    for name, case in CASES.items():
        by_case[name] = []
        for index in range(start, start + len(case.objects)):
            prefix = f"objects[{index}] "
            by_case[name] += [
                f"objects[{index - start}] {e.removeprefix(prefix)}"
                for e in errors
                if e.startswith(prefix)
            ]
        start += len(case.objects)
    claimed = sum(len(v) for v in by_case.values())
    assert claimed == len(errors), "errors not attributed to any object:\n" + "\n".join(errors)
    return by_case


@pytest.mark.parametrize("name", CASES.keys())
def test_validate(name: str, errors_by_case: dict[str, list[str]]) -> None:
    errors = errors_by_case[name]
    assert matches(errors, CASES[name].want), "\n".join(errors) or "(no errors)"


@pytest.mark.parametrize(
    "name", ["valid certificate", "object wrapping a gateway with an unknown field"]
)
def test_validate_alone(name: str, crd_dir: Path) -> None:
    """The same answers when a case is validated on its own."""
    errors = validate.validate(CASES[name].objects, crd_dir=crd_dir)
    assert matches(errors, CASES[name].want), "\n".join(errors) or "(no errors)"


XRD: Obj = {
    "apiVersion": "apiextensions.crossplane.io/v2",
    "kind": "CompositeResourceDefinition",
    "metadata": {"name": "widgets.test.fleetgate.dev"},
    "spec": {
        "group": "test.fleetgate.dev",
        "names": {"kind": "Widget", "plural": "widgets"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "referenceable": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "string", "enum": ["small", "large"]}
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}

XR_CASES = {
    "valid XR": ({"size": "small"}, []),
    "XR with an unknown field": ({"size": "small", "colour": "red"}, ['unknown field: "colour"']),
    "XR with a wrong enum": ({"size": "huge"}, ["Unsupported value"]),
}


@pytest.mark.parametrize(("spec", "want"), XR_CASES.values(), ids=XR_CASES.keys())
def test_extra_schema_files(spec: Obj, want: list[str], crd_dir: Path, tmp_path: Path) -> None:
    xrd_file = tmp_path / "xrd.yaml"
    xrd_file.write_text(yaml.safe_dump(XRD))
    xr = {
        "apiVersion": "test.fleetgate.dev/v1alpha1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "fleet"},
        "spec": spec,
    }
    errors = validate.validate([xr], extra_schema_files=[xrd_file], crd_dir=crd_dir)
    assert matches(errors, [(w,) for w in want]), "\n".join(errors) or "(no errors)"


def test_missing_cli_raises(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CROSSPLANE_CLI", str(tmp_path / "no-such-crossplane"))
    with pytest.raises(validate.ValidatorUnavailableError, match="Crossplane CLI not found"):
        validate.validate([certificate()])


def test_missing_schema_file_raises(crd_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(validate.ValidatorUnavailableError, match="does not exist"):
        validate.validate(
            [certificate()], extra_schema_files=[tmp_path / "x.yaml"], crd_dir=crd_dir
        )


def test_schema_files_define_each_kind_once(crd_dir: Path) -> None:
    """One Gateway API channel only: two definitions of a kind make the CLI report twice."""
    defined: Counter[tuple[str, str, str]] = Counter()
    for path in validate.schema_files(crd_dir):
        for doc in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):
            if doc:
                spec = doc["spec"]
                for version in spec["versions"]:
                    defined[(spec["group"], version["name"], spec["names"]["kind"])] += 1
    assert [gvk for gvk, count in defined.items() if count > 1] == []
    assert defined[("gateway.networking.k8s.io", "v1", "Gateway")] == 1
    # The experimental channel (the one Envoy Gateway installs) is the one chosen.
    assert defined[("gateway.networking.k8s.io", "v1alpha2", "TCPRoute")] == 1
