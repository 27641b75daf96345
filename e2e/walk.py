"""The project's main job: walk the example fleet from nothing to a routed model.

``python -m e2e.walk [FOLDER]`` starts the five functions, renders every XR of
the fleet through the real Crossplane CLI pass after pass until it settles,
prints each pass, the routing table a caller would see and the facts checked,
then runs the failure drills. Exit status 1 when any fact or drill fails.
"""

import argparse
import sys
from pathlib import Path

from e2e import fleetcheck, functions
from e2e.fleet import EXAMPLE, Fleet, describe


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Walk the example fleet to a routed model.")
    parser.add_argument("folder", nargs="?", type=Path, default=EXAMPLE)
    parser.add_argument("--no-drills", action="store_true", help="stop after the first walk")
    args = parser.parse_args(argv)
    fleet = Fleet.load(args.folder)
    failed = 0
    with functions.running(None):
        reports = fleet.converge(echo=True)
        print(f"\nsettled after {len(reports)} passes\n\nrouting table:")
        print(fleetcheck.routing_table(fleet))
        print()
        for title, check in {**fleetcheck.FACTS, **fleetcheck.SCHEMAS}.items():
            failed += report(title, check(fleet))
        if not args.no_drills:
            print(f"\nrouting table while {describe(fleetcheck.SLEEPER)} sleeps:")
            title = "an idle model sleeps: its endpoints parked last, cold start where alone"
            failed += report(title, fleetcheck.scale_to_zero(fleet, show=print))
            print("\nfailure drills:")
            for title, drill in fleetcheck.DRILLS.items():
                failed += report(title, drill(fleet))
    return 1 if failed else 0


def report(title: str, problems: list[str]) -> int:
    print(f"  {'ok  ' if not problems else 'FAIL'} {title}")
    for problem in problems:
        print(f"       - {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
