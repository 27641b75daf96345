"""Gateway API Inference Extension v1.0.2 CRDs, as the release ships them (vendored data).

Upstream publishes these CRDs as plain manifests, not as a Helm chart, so the
serving stack installs them as provider-kubernetes Objects. The three files of
``config/crd/bases`` at tag v1.0.2 (``shared/crds/gateway-api-inference-extension``)
are package data in ``gaie-crds/``, converted from YAML to JSON so the
function reads them with the standard library only; a reviewer reads them
as upstream wrote them. ``tests/unit/test_inference_cluster_stack.py``
proves they equal the pinned files.
"""

import json
from functools import cache
from importlib import resources
from typing import Any, Final

VERSION: Final = "v1.0.2"
FOLDER: Final = "gaie-crds"


@cache
def _crds() -> tuple[str, ...]:
    # Read once per process, in file-name order; callers get fresh copies so
    # nothing is shared.
    folder = resources.files(__package__).joinpath(FOLDER)
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".json")), key=lambda f: f.name)
    return tuple(json.dumps(json.loads(f.read_text()), sort_keys=True) for f in files)


def crds() -> list[dict[str, Any]]:
    """The CRDs, each a fresh dict (status included, as upstream ships it)."""
    return [json.loads(doc) for doc in _crds()]
