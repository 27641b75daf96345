"""Gateway API Inference Extension v1.6.2 CRDs, as the release ships them (vendored data).

Upstream publishes these CRDs as plain manifests, not as a Helm chart, so the
serving stack installs them as provider-kubernetes Objects. The two files of
``config/crd/bases`` at tag v1.6.2 (InferencePool ``inference.networking.k8s.io/v1``
and InferencePoolImport ``inference.networking.x-k8s.io/v1alpha1``, the two its
``config/crd/kustomization.yaml:4-6`` lists; ``make crds`` lays them out from the
module zip) are package data in ``gaie-crds/``, converted from YAML to JSON so
the function reads them with the standard library only; a reviewer reads them
as upstream wrote them. ``tests/unit/test_inference_cluster_stack.py``
proves they equal the pinned files.

v1.0.2's ``inference.networking.x-k8s.io/v1alpha2`` InferencePool and
InferenceObjective are gone from the release (InferenceObjective moved to
llm-d-router's ``llm-d.ai``). Fleetgate composes neither, and the LLMD picker
(llm-d-router v0.10.0) watches InferenceObjectives and InferenceModelRewrites
only where discovery finds their CRD (``pkg/epp/server/controller_config.go:
71-86``), so it runs without them. On a cluster installed before, the two
older CRD Objects leave the composition and, composed without the Delete
management policy, leave their CRDs in place.
"""

import json
from functools import cache
from importlib import resources
from typing import Any, Final

VERSION: Final = "v1.6.2"
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
