"""Every example that composes a Gateway, through Envoy Gateway's own translator.

Each such example (a fleet gateway's front door, a cluster gateway) is
rendered by the real Crossplane CLI, unwrapped with what its cluster would
hold (oracles.translate.example_input: fresh CAs behind its Bundles, its required
Secrets patched in) and translated by egctl: every listener, route and policy
it composes must be accepted and resolved.

A projected Secret is created holding no value, names its sources on the next
pass, and is filled then (core/secrets.py); a fleet gateway composes its
Gateway and policies only once its copies are filled (GatewayReady
WaitingForSecrets until then). So the data plane judged is the example's,
settled: passes run until every projected Secret it composes is observed
filled.
"""

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from e2e import functions, render
from oracles import dataplane, translate
from sim import catalog, loop
from sim.catalog import COMPOSITION_RESOURCE_NAME
from sim.controllers import World, as_stored

GATEWAY_FUNCTIONS = ("compose-inference-cluster", "compose-inference-gateway")


def composes_a_gateway(example: catalog.Example) -> bool:
    """It composes a Gateway, or will once its Secret copies are filled."""
    expect = example.expect or {}
    ready = (expect.get("conditions") or {}).get("GatewayReady") or {}
    return "Gateway" in expect.get("composed", []) or ready.get("reason") == "WaitingForSecrets"


EXAMPLES = [e for e in catalog.discover() if composes_a_gateway(e)]
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


SETTLE_PASSES = 3  # created empty, filled, then served from


def _ready(obj: dict[str, Any] | None) -> bool:
    conditions = (obj or {}).get("status", {}).get("conditions", [])
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _unfilled(answer: render.Rendered, observed: dict[str, Any]) -> dict[str, Any]:
    """The Secret copies an answer composes that are not observed filled (Ready) yet."""
    by_key = {o["metadata"]["annotations"][COMPOSITION_RESOURCE_NAME]: o for o in answer.composed}
    return {
        key: o
        for key, o in by_key.items()
        if o["kind"] == "Object"
        and o["spec"]["forProvider"]["manifest"]["kind"] == "Secret"
        and not _ready(observed.get(key))
    }


def settled(example: catalog.Example, tmp_path: Any) -> list[Any]:
    """What the example composes once every Secret copy it composes is filled on the cluster.

    The example's XR walked through the CLI (``sim.loop.Walk``) where only the
    copies' cluster acts: each pass observes the copies not filled yet beside
    the example's own observed resources, until a pass observes none.
    """
    secrets = [as_stored(d) for d in example.required if d.get("kind") == "Secret"]
    then = tmp_path / "observed.yaml"
    world = World(load_balancers={})

    def call(_: Any, observed: dict[str, Any]) -> render.Rendered:
        if observed:
            then.write_text(yaml.safe_dump_all(list(observed.values())))
        return render.split(render.render(example, observed=then if observed else None))

    def observe(xr: Any, answer: render.Rendered, was: dict[str, Any]) -> dict[str, Any]:
        copies = _unfilled(answer, was)
        return was | world.observe(copies, owner=xr["metadata"]["name"], control_plane=secrets)

    walk = loop.Walk(example.xr, call, observe, observed=example.observed)
    # The last pass renders from the copies filled and observes nothing new.
    last = walk.settle(max_passes=SETTLE_PASSES + 1, what=example.name)
    assert not _unfilled(last, walk.observed), f"{example.name}: its Secret copies never filled"
    return last.composed


@pytest.mark.parametrize("example", CASES)
def test_envoy_gateway_accepts_what_the_example_composes(
    running: dict[str, str], example: catalog.Example, tmp_path: Any
) -> None:
    composed = settled(example, tmp_path)
    secrets = [as_stored(d) for d in example.required if d.get("kind") == "Secret"]
    given = translate.example_input(composed, secrets)
    result = translate.translate(given, tmp_path)
    assert result.objects("gateways"), "nothing translated"
    cluster = dataplane.Cluster(example.name, given, given, result)
    assert dataplane.status_problems(cluster) == []
