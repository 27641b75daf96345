"""Bounded, deterministic, collision-free names."""

import re

import pytest

from fleetgate.core import names

LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")

DNS_LABEL_CASES = [
    ("short and valid stays as is", ("fleetgate", "gw", "public"), "fleetgate-gw-public"),
    ("exactly 63 stays as is", ("a" * 63,), "a" * 63),
]


@pytest.mark.parametrize(
    ("parts", "want"), [c[1:] for c in DNS_LABEL_CASES], ids=[c[0] for c in DNS_LABEL_CASES]
)
def test_dns_label_keeps_valid_names(parts: tuple[str, ...], want: str) -> None:
    assert names.dns_label(*parts) == want


TRICKY = [
    ("64 characters", "a" * 64),
    ("300 characters", "x" * 300),
    ("dots", "eu.west.1"),
    ("upper case", "EU-West"),
    ("digits first", "1cluster"),
    ("unicode", "grün-cluster"),
    ("only unicode", "集群"),
    ("leading dash after sanitising", ".hidden"),
]


@pytest.mark.parametrize("raw", [c[1] for c in TRICKY], ids=[c[0] for c in TRICKY])
@pytest.mark.parametrize(
    "derive", [names.dns_label, names.cluster_label], ids=["dns_label", "cluster_label"]
)
def test_labels_are_valid_and_bounded(derive: object, raw: str) -> None:
    label = derive(raw)  # type: ignore[operator]
    assert len(label) <= names.DNS_LABEL_MAX
    assert LABEL.match(label), label
    assert derive(raw) == label, "deterministic"  # type: ignore[operator]


COLLIDING = [
    ("dot vs dash", "eu.west", "eu-west"),
    ("case", "EU-west", "eu-west"),
    ("long shared prefix", "p" * 70 + "a", "p" * 70 + "b"),
    ("unicode vs ascii", "grün", "gr-n"),
]


@pytest.mark.parametrize(("a", "b"), [c[1:] for c in COLLIDING], ids=[c[0] for c in COLLIDING])
def test_distinct_inputs_never_share_a_name(a: str, b: str) -> None:
    assert names.dns_label(a) != names.dns_label(b)
    assert names.object_name(a) != names.object_name(b)
    assert names.cluster_label(a) != names.cluster_label(b)


def test_cluster_label_is_always_hashed_so_dots_and_dashes_differ() -> None:
    assert names.cluster_label("eu-west") != "eu-west"
    assert names.cluster_label("eu-west").startswith("eu-west-")


def test_cluster_hostname_is_a_service_name_in_the_system_namespace() -> None:
    host = names.cluster_hostname("eu.west.1")
    label, rest = host.split(".", 1)
    assert rest == "fleetgate-system.svc.cluster.local"
    assert LABEL.match(label)
    assert host.count(".") < 5, "fewer than five dots, so ndots:1 resolves it directly"


@pytest.mark.parametrize("length", [1, 63, 64, 253, 254, 1000])
def test_object_name_bound(length: int) -> None:
    name = names.object_name("n" * length)
    assert len(name) <= names.OBJECT_NAME_MAX
    assert re.match(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$", name)


@pytest.mark.parametrize(
    "parts",
    [("fleetgate gateway", "g" * 63), ("ü" * 40,), ("ok",)],
    ids=["long", "unicode", "short"],
)
def test_common_name_fits_x509_bound_in_bytes(parts: tuple[str, ...]) -> None:
    cn = names.common_name(*parts)
    assert len(cn.encode("utf-8")) <= names.COMMON_NAME_MAX


def test_shared_remote_names_are_bounded_for_the_longest_inputs() -> None:
    gateway, cluster = "g" * 253, "c" * 253
    assert len(names.fleet_gateway(gateway)) <= names.DNS_LABEL_MAX
    assert len(names.gateway_client_certificate(gateway)) <= names.OBJECT_NAME_MAX
    assert len(names.gateway_cluster_ca(gateway, cluster)) <= names.OBJECT_NAME_MAX
    assert names.gateway_cluster_ca(gateway, "a.b") != names.gateway_cluster_ca(gateway, "a-b")
