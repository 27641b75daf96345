"""Every example that composes a Gateway, through Envoy Gateway's own translator.

Each such example (a fleet gateway's front door, a cluster gateway) is
rendered by the real Crossplane CLI, unwrapped with what its cluster would
hold (e2e.translate.example_input: fresh CAs behind its Bundles, its required
Secrets patched in) and translated by egctl: every listener, route and policy
it composes must be accepted and resolved.
"""

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from e2e import dataplane, functions, render, translate
from e2e.fleet import as_stored

GATEWAY_FUNCTIONS = ("compose-inference-cluster", "compose-inference-gateway")


def composes_a_gateway(example: render.Example) -> bool:
    expect = example.optional("expect.yaml")
    kinds = (yaml.safe_load(expect.read_text()) or {}).get("composed", []) if expect else []
    return "Gateway" in kinds


EXAMPLES = [e for e in render.discover() if composes_a_gateway(e)]
# The CAs the examples publish are reissued long-lived by `python -m
# e2e.example_cas` (Envoy Gateway refuses an expired client CA): a one-day CA
# kept in a file once failed the inference-cluster examples here.
CASES = [pytest.param(e, id=e.name) for e in EXAMPLES]


@pytest.fixture(scope="module")
def running() -> Iterator[dict[str, str]]:
    with functions.running(sorted({e.type.function for e in EXAMPLES})) as targets:
        yield targets


def test_the_gateway_examples_are_found() -> None:
    names = {e.name for e in EXAMPLES}
    assert "inference-gateway/production" in names
    assert "inference-cluster/walk-9-schedulable" in names
    assert {e.type.function for e in EXAMPLES} <= set(GATEWAY_FUNCTIONS)


@pytest.mark.parametrize("example", CASES)
def test_envoy_gateway_accepts_what_the_example_composes(
    running: dict[str, str], example: render.Example, tmp_path: Any
) -> None:
    _, composed, _ = render.split(render.render(example))
    required = example.optional("required.yaml")
    docs = [d for d in yaml.safe_load_all(required.read_text()) if d] if required else []
    secrets = [as_stored(d) for d in docs if d.get("kind") == "Secret"]
    given = translate.example_input(composed, secrets)
    result = translate.translate(given, tmp_path)
    assert result.objects("gateways"), "nothing translated"
    cluster = dataplane.Cluster(example.name, given, given, result)
    assert dataplane.status_problems(cluster) == []
