"""The generated fleet of ``make bench-fleet``: every document is one its kind accepts, and
the clusters it spreads over are distinct workload clusters."""

import pytest

from bench import fleetgen
from fleetgate.core.kinds.cluster import InferenceCluster
from fleetgate.core.kinds.deployment import ModelDeployment
from fleetgate.core.kinds.endpoint import ModelEndpoint
from fleetgate.core.kinds.gateway import InferenceGateway
from fleetgate.core.kinds.service import ModelService

KINDS = {
    k.__name__: k
    for k in (InferenceCluster, InferenceGateway, ModelDeployment, ModelEndpoint, ModelService)
}


@pytest.mark.parametrize("clusters", [1, 2, 3, 6])
def test_every_document_is_one_its_kind_accepts(clusters: int) -> None:
    size = fleetgen.Size.for_services(40, gateways=4, clusters=clusters)
    docs = fleetgen.documents(size)
    for doc in docs:
        if doc["kind"] in KINDS:
            KINDS[doc["kind"]].model_validate(doc)
    count = {k: sum(1 for d in docs if d["kind"] == k) for k in KINDS}
    assert count == {
        "InferenceCluster": clusters,
        "InferenceGateway": 4,
        "ModelDeployment": size.deployments,
        "ModelEndpoint": size.endpoints,
        "ModelService": 40,
    }


def test_clusters_are_distinct_workload_clusters_and_host_the_gateways_in_turn() -> None:
    size = fleetgen.Size.for_services(10, gateways=5, clusters=4)
    names = [c["metadata"]["name"] for c in fleetgen.clusters(4)]
    assert names[:2] == ["eu-west", "us.east"]  # the example fleet's, as the drills know it
    assert len(set(names)) == 4
    assert len(set(fleetgen.workload_clusters(4))) == 4
    hosts = [fleetgen.gateway(i, size)["spec"]["clusterName"] for i in range(5)]
    assert hosts == [*names, names[0]]
