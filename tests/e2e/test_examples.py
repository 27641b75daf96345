"""Every example, rendered by the real Crossplane CLI through the functions running as processes.

Each example must render, say what its ``expect.yaml`` says, leak no Secret
value, and validate against the pinned upstream CRDs and our XRDs.
"""

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from e2e import functions, render
from oracles import secretsearch
from sim import catalog

EXAMPLES = catalog.discover()


@pytest.fixture(scope="session")
def running_functions() -> Iterator[dict[str, str]]:
    with functions.running(sorted({e.type.name for e in EXAMPLES})) as targets:
        yield targets


@pytest.fixture(scope="session")
def rendered(running_functions: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """Render each example once; the tests below read the same output."""
    return {e.name: render.render(e) for e in EXAMPLES}


def composed_kinds(composed: list[dict[str, Any]]) -> list[str]:
    """Kinds composed, looking through provider-kubernetes Objects to what they carry."""
    kinds = []
    for obj in composed:
        manifest = obj.get("spec", {}).get("forProvider", {}).get("manifest")
        kinds.append(manifest["kind"] if obj.get("kind") == "Object" and manifest else obj["kind"])
    return sorted(kinds)


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_renders_as_expected(
    example: catalog.Example, rendered: dict[str, list[dict[str, Any]]]
) -> None:
    xr, composed, _ = render.split(rendered[example.name])
    expect = example.expect
    conditions = {c["type"]: c for c in xr.get("status", {}).get("conditions", [])}
    for type_, want in expect.get("conditions", {}).items():
        assert type_ in conditions, f"condition {type_} missing; have {sorted(conditions)}"
        got = {k: conditions[type_].get(k) for k in want}
        assert got == want
    if "composed" in expect:
        assert composed_kinds(composed) == sorted(expect["composed"])


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_leaks_no_secret(
    example: catalog.Example, rendered: dict[str, list[dict[str, Any]]]
) -> None:
    output = yaml.safe_dump_all(rendered[example.name])
    assert secretsearch.leaks(secretsearch.needles(example.required), [output]) == []


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_validates_against_pinned_schemas(
    example: catalog.Example, rendered: dict[str, list[dict[str, Any]]]
) -> None:
    assert render.validate_rendered(example, rendered[example.name]) == []
