"""The derived hostname fleet gateways use for a cluster, on tricky cluster names."""

import re

import pytest

from fleetgate.core.names import cluster_hostname
from fleetgate.inference_cluster.composer import compose
from tests.support import request, run
from tests.support.inference_cluster import (
    cluster_side,
    cluster_xr,
    gateways,
    manifest_of,
    settle,
)

LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
SUFFIX = ".fleetgate-system.svc.cluster.local"

TRICKY = [
    # name, cluster name (XR names are DNS subdomains up to 253; unicode never
    # passes the API server, but the function must not break on it either)
    ("plain", "eu-west"),
    ("dots", "eu.west.1"),
    ("63 characters", "a" * 63),
    ("64 characters", "b" * 64),
    ("253 characters with dots", ".".join(["c" * 62] * 4)[:253]),
    ("digits first", "1st-cluster"),
    ("only digits", "12345"),
    ("unicode", "grün"),
]


@pytest.mark.parametrize("name", [t[1] for t in TRICKY], ids=[t[0] for t in TRICKY])
def test_derived_hostname_is_a_bounded_dns_label_under_the_system_namespace(name: str) -> None:
    hostname = cluster_hostname(name)
    label, _, rest = hostname.partition(".")
    assert "." + rest == SUFFIX
    assert len(label) <= 63
    assert LABEL.match(label), label
    assert cluster_hostname(name) == hostname, "deterministic"


@pytest.mark.parametrize("name", [t[1] for t in TRICKY[:7]], ids=[t[0] for t in TRICKY[:7]])
def test_composer_publishes_and_serves_the_same_derived_hostname(name: str) -> None:
    out = settle(cluster_xr(name), gateways("public"), remote=cluster_side())[-1]
    hostname = cluster_hostname(name)
    assert out.composite["status"]["gateway"]["hostname"] == hostname
    gw = manifest_of(out.desired["gateway"])
    assert gw["spec"]["listeners"][0]["hostname"] == hostname
    assert manifest_of(out.desired["serving-certificate"])["spec"]["dnsNames"] == [hostname]


TWINS = [
    ("dot vs dash", "eu.west", "eu-west"),
    ("dots vs dashes, long", "x" * 40 + ".a.b", "x" * 40 + "-a-b"),
    ("long shared prefix", "p" * 80 + "1", "p" * 80 + "2"),
    ("unicode vs its sanitised twin", "grün", "gr-n"),
]


@pytest.mark.parametrize(("a", "b"), [t[1:] for t in TWINS], ids=[t[0] for t in TWINS])
def test_names_that_sanitise_alike_get_distinct_hostnames(a: str, b: str) -> None:
    assert cluster_hostname(a) != cluster_hostname(b)


def test_hostname_is_never_published_before_mutual_tls_even_for_a_valid_label() -> None:
    out = run(compose, request(cluster_xr("eu-west"), required=gateways("public")))
    assert "gateway" not in out.composite.get("status", {})
