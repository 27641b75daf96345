"""The runner: nothing escapes RunFunction, and errors disclose nothing."""

from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from structlog.testing import capture_logs

from fleetgate.core.errors import InputError
from fleetgate.core.kinds.cluster import InferenceCluster
from fleetgate.core.reconcile import MESSAGE_MAX, Reconcile, Selector
from tests.support import request, run

XR: dict[str, Any] = {
    "apiVersion": "fleetgate.dev/v1alpha1",
    "kind": "InferenceCluster",
    "metadata": {"name": "eu-west"},
    "spec": {"credentials": {"providerConfigName": "eu-west"}},
}
SECRET_VALUE = "s3cr3t-value-that-must-not-leak"


def explode(rec: Reconcile) -> None:
    rec.compose("half-done", {"apiVersion": "v1", "kind": "ConfigMap"})
    raise KeyError(SECRET_VALUE)


def reject(rec: Reconcile) -> None:
    rec.compose("half-done", {"apiVersion": "v1", "kind": "ConfigMap"})
    raise InputError("spec.origin: must be a DNS name")


def test_unexpected_exception_becomes_a_fatal_result_without_its_text() -> None:
    # capture_logs, not capsys: another test may have configured the SDK's
    # logging with a stream bound before capsys could replace it.
    with capture_logs() as logs:
        out = run(explode, request(XR))
    assert [e["error"] for e in logs] == ["KeyError"], "the failure is logged"
    assert SECRET_VALUE not in str(logs), "but not the exception's text"
    assert out.fatal == ["internal error (KeyError); see the function's logs"]
    assert SECRET_VALUE not in str(out.rsp)
    assert out.desired == {}, "a failed pass returns no half-built desired state"


def test_input_error_is_a_fatal_result_naming_the_field() -> None:
    out = run(reject, request(XR))
    assert out.fatal == ["spec.origin: must be a DNS name"]
    assert out.desired == {}


def test_messages_are_bounded() -> None:
    def noisy(rec: Reconcile) -> None:
        rec.warning("x" * 100_000)

    out = run(noisy, request(XR))
    assert len(out.warnings[0]) == MESSAGE_MAX


def test_require_tells_unresolved_from_resolved_to_nothing() -> None:
    seen: list[list[dict[str, Any]] | None] = []

    def probe(rec: Reconcile) -> None:
        seen.append(rec.require("clusters", Selector("fleetgate.dev/v1alpha1", "InferenceCluster")))

    run(probe, request(XR))
    run(probe, request(XR, required={"clusters": []}))
    run(probe, request(XR, required={"clusters": [XR]}))
    assert seen[0] is None
    assert seen[1] == []
    assert seen[2] is not None
    assert seen[2][0]["metadata"]["name"] == "eu-west"


def test_requirement_is_declared_on_every_call() -> None:
    def probe(rec: Reconcile) -> None:
        rec.require("clusters", Selector("fleetgate.dev/v1alpha1", "InferenceCluster", labels={}))

    cases: list[dict[str, list[dict[str, Any]]] | None] = [None, {"clusters": []}]
    for required in cases:
        out = run(probe, request(XR, required=required))
        assert set(out.requirements) == {"clusters"}


def test_selector_without_labels_matches_everything_explicitly() -> None:
    every = Selector("fleetgate.dev/v1alpha1", "InferenceCluster").to_proto()
    assert every.WhichOneof("match") == "match_labels"
    assert dict(every.match_labels.labels) == {}
    named = Selector("v1", "Secret", name="s", namespace="ns").to_proto()
    assert named.WhichOneof("match") == "match_name"


def test_malformed_required_resource_is_fatal_and_named() -> None:
    def probe(rec: Reconcile) -> None:
        rec.require_all(
            "clusters", Selector("fleetgate.dev/v1alpha1", "InferenceCluster"), InferenceCluster
        )

    bad = {**XR, "metadata": {"name": "broken"}, "spec": {"credentials": {}}}
    out = run(probe, request(XR, required={"clusters": [bad]}))
    assert len(out.fatal) == 1
    assert "InferenceCluster broken" in out.fatal[0]
    assert "spec.credentials" in out.fatal[0]


def test_keep_carries_an_observed_resource_without_server_fields_or_crossplane_records() -> None:
    observed = {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {
            "name": "o",
            "uid": "123",
            "resourceVersion": "9",
            # Crossplane's controller reference is its own; the other is the function's.
            "ownerReferences": [
                {"kind": "Composite", "name": "xr", "uid": "1", "controller": True},
                {"kind": "Object", "name": "first", "uid": "2"},
            ],
        },
        "spec": {"forProvider": {"manifest": {"kind": "ConfigMap"}}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }

    composed_xr = {
        "apiVersion": "fleetgate.dev/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": "e", "namespace": "ns"},
        "spec": {"origin": "https://x.example", "crossplane": {"resourceRefs": []}},
    }

    def keeper(rec: Reconcile) -> None:
        assert rec.keep("gone") is False
        assert rec.keep("cm") is True
        assert rec.keep("xr") is True

    out = run(keeper, request(XR, observed={"cm": observed, "xr": composed_xr}))
    # As ready as observed: an unmarked resource would count as unready to Crossplane.
    assert out.rsp.desired.resources["cm"].ready == fnv1.READY_TRUE
    assert out.rsp.desired.resources["xr"].ready == fnv1.READY_FALSE
    desired = out.desired
    assert desired.pop("xr")["spec"] == {"origin": "https://x.example"}
    assert desired == {
        "cm": {
            "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
            "kind": "Object",
            "metadata": {
                "name": "o",
                "ownerReferences": [{"kind": "Object", "name": "first", "uid": "2"}],
            },
            "spec": {"forProvider": {"manifest": {"kind": "ConfigMap"}}},
        }
    }


@pytest.mark.parametrize(
    ("calls", "ready"),
    [
        pytest.param([], "READY_UNSPECIFIED", id="never asked"),
        pytest.param([True], "READY_UNSPECIFIED", id="allowed"),
        pytest.param([False], "READY_FALSE", id="held back"),
        pytest.param([False, True], "READY_UNSPECIFIED", id="held back, then allowed"),
        pytest.param([True, False], "READY_FALSE", id="allowed, then held back"),
    ],
)
def test_a_function_holds_an_xr_back_but_never_declares_it_ready(
    calls: list[bool], ready: str
) -> None:
    """READY_TRUE would supersede what Crossplane derives from the composed resources."""

    def decide(rec: Reconcile) -> None:
        for allowed in calls:
            rec.allow_ready(allowed)

    assert run(decide, request(XR)).composite_ready == ready


@pytest.mark.parametrize(
    "xr",
    [{}, {"kind": "InferenceCluster"}, {"metadata": "nope"}, {"spec": [1, 2]}],
    ids=["empty", "no metadata", "metadata wrong type", "spec wrong type"],
)
def test_garbage_composite_is_fatal(xr: dict[str, Any]) -> None:
    def read(rec: Reconcile) -> None:
        rec.composite(InferenceCluster)

    out = run(read, request(xr))
    assert len(out.fatal) == 1
    assert out.fatal[0].startswith("invalid ")


def test_malformed_required_resources_give_one_answer_whatever_their_order() -> None:
    def probe(rec: Reconcile) -> None:
        rec.require_all(
            "clusters", Selector("fleetgate.dev/v1alpha1", "InferenceCluster"), InferenceCluster
        )

    broken = [
        {**XR, "metadata": {"name": name}, "spec": {"credentials": {}}} for name in ("a", "b")
    ]
    answers = {
        tuple(run(probe, request(XR, required={"clusters": order})).fatal)
        for order in (broken, broken[::-1])
    }
    assert len(answers) == 1


CLUSTERS = Selector("fleetgate.dev/v1alpha1", "InferenceCluster")


def _cluster(name: str, **spec: Any) -> dict[str, Any]:
    return {**XR, "metadata": {"name": name}, "spec": spec or XR["spec"]}


def test_require_by_name_validates_only_what_is_read() -> None:
    seen: dict[str, Any] = {}

    def probe(rec: Reconcile) -> None:
        found = rec.require_by_name("clusters", CLUSTERS, InferenceCluster)
        assert found is not None
        seen.update(names=list(found), eu=found.get("eu"), missing=found.get("nowhere"))

    # An unrelated malformed cluster does not stop a function that never reads it.
    out = run(
        probe, request(XR, required={"clusters": [_cluster("zz", credentials={}), _cluster("eu")]})
    )
    assert out.fatal == []
    assert seen["names"] == ["eu", "zz"], "listed by name, whatever Crossplane's order"
    assert seen["eu"].metadata.name == "eu"
    assert seen["missing"] is None


def test_require_by_name_names_a_malformed_resource_when_it_is_read() -> None:
    def probe(rec: Reconcile) -> None:
        found = rec.require_by_name("clusters", CLUSTERS, InferenceCluster)
        assert found is not None
        found.get("broken")

    out = run(probe, request(XR, required={"clusters": [_cluster("broken", credentials={})]}))
    assert len(out.fatal) == 1
    assert "InferenceCluster broken" in out.fatal[0]
    assert "spec.credentials" in out.fatal[0]


def test_require_by_name_refuses_a_name_listed_twice_and_tells_unresolved() -> None:
    def probe(rec: Reconcile) -> None:
        assert rec.require_by_name("clusters", CLUSTERS, InferenceCluster) is None

    assert run(probe, request(XR)).fatal == []

    def twice(rec: Reconcile) -> None:
        rec.require_by_name("clusters", CLUSTERS, InferenceCluster)

    out = run(twice, request(XR, required={"clusters": [_cluster("eu"), _cluster("eu")]}))
    assert out.fatal == ["required InferenceClusters: eu appears more than once"]


@pytest.mark.parametrize(
    ("where", "fragment"),
    [
        ("xr", "the XR: spec.capacity.gpus"),
        ("required", "required resource clusters[1]: spec.capacity.gpus"),
    ],
)
def test_a_number_json_cannot_hold_is_a_fatal_result_naming_where(
    where: str, fragment: str
) -> None:
    def read_everything(rec: Reconcile) -> None:
        rec.composite(InferenceCluster)
        rec.require_all("clusters", CLUSTERS, InferenceCluster)

    xr = {**XR, "spec": {**XR["spec"], "capacity": {"gpus": 1}}}
    clusters = [_cluster(n, **xr["spec"]) for n in ("a", "b")]
    req = request(xr, required={"clusters": clusters})
    broken = (
        req.observed.composite.resource
        if where == "xr"
        else req.required_resources["clusters"].items[1].resource
    )
    capacity = broken.fields["spec"].struct_value.fields["capacity"].struct_value
    capacity.fields["gpus"].number_value = float("inf" if where == "xr" else "nan")
    out = run(read_everything, req)
    assert out.fatal == [
        f"the request holds a number JSON cannot hold (NaN or Infinity) at {fragment}; "
        "nothing was changed"
    ]
    assert out.desired == {}
