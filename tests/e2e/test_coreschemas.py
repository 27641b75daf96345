"""The built-in kinds' schemas: taken from the pinned Kubernetes module, made structural."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from schemas import coreschemas

SCHEMAS: dict[str, dict[str, Any]] = {
    "Port": {"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]},
    "Node": {
        "type": "object",
        "description": "a recursive type",
        "properties": {"child": {"$ref": "#/components/schemas/Node"}},
    },
    "Spec": {
        "type": "object",
        "properties": {
            "port": {"allOf": [{"$ref": "#/components/schemas/Port"}], "default": 80},
            "tree": {"$ref": "#/components/schemas/Node"},
            "raw": {"description": "untyped, like RawExtension"},
        },
        "required": ["port"],
    },
}


def test_references_resolve_and_only_validation_stays() -> None:
    out = coreschemas.structural(SCHEMAS["Spec"], SCHEMAS, frozenset({"Spec"}))
    assert out["required"] == ["port"]
    assert out["properties"]["port"] == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    tree = out["properties"]["tree"]
    assert "description" not in tree
    assert tree["properties"]["child"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }, "a recursive type accepts what it holds where it recurs"
    assert out["properties"]["raw"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }


def test_every_composed_built_in_kind_has_a_crd(tmp_path: Path) -> None:
    files = coreschemas.fetch(tmp_path / "core")
    kinds = {yaml.safe_load(f.read_text())["spec"]["names"]["kind"] for f in files}
    assert kinds == {k for _, k in coreschemas.COVERED}
    deployment = yaml.safe_load((tmp_path / "core" / "deployments.apps.yaml").read_text())
    container = deployment["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
        "spec"
    ]["properties"]["template"]["properties"]["spec"]["properties"]["containers"]["items"]
    assert "readinessProbe" in container["properties"]
    assert "$ref" not in yaml.safe_dump(deployment)


def test_a_module_that_does_not_match_its_pin_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(coreschemas, "SUM", "h1:" + "A" * 43 + "=")
    with pytest.raises(coreschemas.CoreSchemaError, match="pinned"):
        coreschemas.fetch(tmp_path / "core")
