"""Every example that composes a Gateway, through Envoy Gateway's own translator.

Each such example (a fleet gateway's front door, a cluster gateway) is
rendered by the real Crossplane CLI, unwrapped with what its cluster would
hold (e2e.translate.example_input: fresh CAs behind its Bundles, its required
Secrets patched in) and translated by egctl: every listener, route and policy
it composes must be accepted and resolved.

A pass that creates a projected Secret creates it holding no value and names
its sources only on the next pass (core/secrets.py); Envoy Gateway refuses an
API-key Secret whose keys are all empty (duplicated keys: v1.8.3
internal/gatewayapi/securitypolicy.go:2068-2071) and serves such routes a 500
(:1055-1063). So the data plane judged is the pass after the Secrets the
example creates exist: the one that patches their values in.
"""

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from e2e import dataplane, functions, render, translate
from e2e.fleet import COMPOSITION_RESOURCE_NAME, World, as_stored

GATEWAY_FUNCTIONS = ("compose-inference-cluster", "compose-inference-gateway")


def composes_a_gateway(example: render.Example) -> bool:
    return "Gateway" in (example.expect or {}).get("composed", [])


EXAMPLES = [e for e in render.discover() if composes_a_gateway(e)]
# The CAs the examples publish are reissued long-lived by `python -m
# e2e.example_cas` (Envoy Gateway refuses an expired client CA): a one-day CA
# kept in a file once failed the inference-cluster examples here.
CASES = [pytest.param(e, id=e.name) for e in EXAMPLES]


@pytest.fixture(scope="module")
def running() -> Iterator[dict[str, str]]:
    with functions.running(sorted({e.type.name for e in EXAMPLES})) as targets:
        yield targets


def test_the_gateway_examples_are_found() -> None:
    names = {e.name for e in EXAMPLES}
    assert "inference-gateway/production" in names
    assert "inference-cluster/walk-9-schedulable" in names
    assert {e.type.name for e in EXAMPLES} <= set(GATEWAY_FUNCTIONS)


def settled(example: render.Example, tmp_path: Any) -> list[Any]:
    """What the example composes once the Secrets it creates exist on the cluster."""
    _, composed, _ = render.split(render.render(example))
    observed = list(example.observed.values())
    seen = {d["metadata"]["annotations"][COMPOSITION_RESOURCE_NAME] for d in observed}
    created = {
        key: o
        for o in composed
        if o["kind"] == "Object"
        and o["spec"]["forProvider"]["manifest"]["kind"] == "Secret"
        and (key := o["metadata"]["annotations"][COMPOSITION_RESOURCE_NAME]) not in seen
    }
    if not created:
        return composed
    then = tmp_path / "observed.yaml"
    new = World(load_balancers={}).observe(created, owner=example.xr["metadata"]["name"])
    then.write_text(yaml.safe_dump_all([*observed, *new.values()]))
    _, composed, _ = render.split(render.render(example, observed=then))
    return composed


@pytest.mark.parametrize("example", CASES)
def test_envoy_gateway_accepts_what_the_example_composes(
    running: dict[str, str], example: render.Example, tmp_path: Any
) -> None:
    composed = settled(example, tmp_path)
    secrets = [as_stored(d) for d in example.required if d.get("kind") == "Secret"]
    given = translate.example_input(composed, secrets)
    result = translate.translate(given, tmp_path)
    assert result.objects("gateways"), "nothing translated"
    cluster = dataplane.Cluster(example.name, given, given, result)
    assert dataplane.status_problems(cluster) == []
