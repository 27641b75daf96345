"""Tests that run the Crossplane CLI say so (``@pytest.mark.crossplane_cli``).

On a checkout without the CLI (before ``make tools``), ``pytest tests/unit``
skips them and says why; in CI (``CI=true``, as ``.ci/run`` runs) they always
run, so a missing CLI fails them there instead of hiding a check.
"""

import os

import pytest

from schemas import validate


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    cli = validate.cli_path()
    if os.environ.get("CI") == "true" or (cli.is_file() and os.access(cli, os.X_OK)):
        return
    skip = pytest.mark.skip(reason=f"needs the Crossplane CLI at {cli} (make tools)")
    for item in items:
        if item.get_closest_marker("crossplane_cli") is not None:
            item.add_marker(skip)
