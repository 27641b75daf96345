"""Render every example through the real Crossplane CLI, with the functions as processes.

``python -m e2e.render [EXAMPLE_DIR ...]`` is the project's main job: it
starts the functions the examples need, runs ``crossplane render`` on each
example (with the XR's XRD, and the example's required and observed
resources), prints what was composed and the XR's conditions, then validates
every rendered object against the pinned upstream CRDs and our XRDs.

An example is a folder holding ``xr.yaml`` and optionally ``required.yaml``
(resources the function asks Crossplane for), ``observed.yaml`` (composed
resources as they exist) and ``expect.yaml`` (what the tests check).
``--update`` regenerates the last two from the functions (``e2e.snapshots``).
"""

import argparse
import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from e2e import functions, snapshots
from schemas import validate
from sim.catalog import REPO, Example, discover, registry
from tools import pinned

RENDER_TIMEOUT_S = 120


def crossplane_cli() -> Path:
    cli = Path(os.environ.get("CROSSPLANE_CLI", REPO / ".cache" / "bin" / "crossplane"))
    if not cli.exists():
        raise FileNotFoundError(f"Crossplane CLI not found at {cli}: run `make tools`")
    return cli


def render(example: Example, observed: Path | None = None) -> list[dict[str, Any]]:
    """Run ``crossplane render`` for one example; return the rendered objects.

    ``observed`` replaces the example's observed.yaml (a later pass of it).
    """
    xr_type = example.type
    cmd = [
        str(crossplane_cli()),
        "render",
        str(example.path / "xr.yaml"),
        str(xr_type.composition),
        str(functions.functions_file()),
        f"--xrd={xr_type.xrd}",
        "--include-function-results",
        # The whole XR, so it validates against its XRD like the composed objects.
        "--include-full-xr",
        f"--timeout={RENDER_TIMEOUT_S}s",
    ]
    if required := example.optional("required.yaml"):
        cmd.append(f"--required-resources={required}")
    if observed := observed or example.optional("observed.yaml"):
        cmd.append(f"--observed-resources={observed}")
    out = pinned.run(
        cmd, what=f"crossplane render of {example.name}", timeout=RENDER_TIMEOUT_S + 30
    )
    return [doc for doc in yaml.safe_load_all(out) if doc]


class Rendered(NamedTuple):
    """What ``crossplane render`` printed for one XR, as a walk's answer (``sim.loop.Answer``)."""

    xr: dict[str, Any]  # the whole XR, with the status Crossplane writes back
    composed: list[dict[str, Any]]  # the desired composed resources
    results: list[dict[str, Any]]  # the function's results, as Result documents

    @property
    def fatal(self) -> list[str]:
        # None from the CLI, which fails instead of printing one (v2.2.0
        # cmd/crank/render/render.go:352-357); an answer rendered otherwise may hold one.
        return [r.get("message", "") for r in self.results if r.get("severity") == "SEVERITY_FATAL"]

    @property
    def declared(self) -> dict[str, str]:
        # render resolves the function's requirements from --required-resources
        # itself, and each render starts afresh: nothing is carried to the next.
        return {}


def split(rendered: list[dict[str, Any]]) -> Rendered:
    """Rendered output → (the XR, composed resources, function results)."""
    xr: dict[str, Any] = {}
    composed: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for doc in rendered:
        if doc.get("kind") == "Result" and doc.get("apiVersion", "").startswith(
            "render.crossplane"
        ):
            results.append(doc)
        elif not composed and not xr:
            xr = doc
        else:
            composed.append(doc)
    return Rendered(xr, composed, results)


def summarise(example: Example, rendered: list[dict[str, Any]]) -> str:
    xr, composed, results = split(rendered)
    lines = [f"== {example.name}  ({xr.get('kind')} {xr.get('metadata', {}).get('name')})"]
    for cond in xr.get("status", {}).get("conditions", []):
        message = f" — {cond['message']}" if cond.get("message") else ""
        lines.append(f"   {cond['type']}={cond['status']} ({cond.get('reason', '')}){message}")
    for obj in composed:
        manifest = obj.get("spec", {}).get("forProvider", {}).get("manifest")
        shown = manifest if obj.get("kind") == "Object" and manifest else obj
        name = shown.get("metadata", {}).get("name", "")
        via = " (via Object)" if shown is not obj else ""
        lines.append(f"   + {shown.get('kind')} {name}{via}")
    if not composed:
        lines.append("   (composes nothing)")
    for res in results:
        lines.append(f"   ! {res.get('severity', '')}: {res.get('message', '')}")
    return "\n".join(lines)


def validate_rendered(example: Example, rendered: list[dict[str, Any]]) -> list[str]:
    """Validate the XR against its XRD and every composed object against the pinned CRDs."""
    xr, composed, _ = split(rendered)
    return validate.validate([xr, *composed], extra_schema_files=schema_files())


def schema_files() -> list[Path]:
    """Our own schemas: every XRD (an XR may compose XRs of another kind) and every
    function's Composition input CRD (a Composition step's ``input`` is checked too)."""
    xrds = {t.xrd for t in registry().values()}
    inputs = set((REPO / "package" / "functions").glob("*/input/*.yaml"))
    return sorted(xrds | inputs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("examples", nargs="*", type=Path, help="example folders (default: all)")
    parser.add_argument("--no-validate", action="store_true", help="skip schema validation")
    parser.add_argument(
        "--update",
        action="store_true",
        help="regenerate the examples' observed.yaml and expect.yaml from the functions "
        "(in process; see e2e/snapshots.py) instead of rendering",
    )
    args = parser.parse_args(argv)
    if args.update:
        written = snapshots.update()
        for path in written:
            print(f"wrote {path.relative_to(REPO)}")
        print(f"{len(written)} snapshots changed")
        return 0
    examples = [Example(p.resolve()) for p in args.examples] or discover()
    needed = sorted({e.type.name for e in examples})
    failures = 0
    with functions.running(needed):
        for example in examples:
            rendered = render(example)
            print(summarise(example, rendered))
            if args.no_validate:
                continue
            errors = validate_rendered(example, rendered)
            for error in errors:
                print(f"   ✗ {error}")
            failures += bool(errors)
    print(f"\n{len(examples)} examples rendered, {failures} failed validation")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
