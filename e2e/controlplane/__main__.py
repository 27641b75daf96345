"""``python -m e2e.controlplane {e2e,up}``: the fleet on a real control plane (see stack.py)."""

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

from e2e.controlplane import fleet, processes, stack, workloads

REPO = Path(__file__).resolve().parents[2]
STATE = REPO / ".cache" / "controlplane"
WORKLOADS = ["eu-west-1", "us-east-1"]
CONVERGE_TIMEOUT_S = 600.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("command", choices=["e2e", "up"])
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress, live
    shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    processes.isolate()
    (STATE / "pid").write_text(str(os.getpid()))
    print("starting the control plane (logs in .cache/controlplane/logs):")
    with processes.Supervisor(STATE / "logs") as sup:
        try:
            st = stack.bring_up(sup, STATE, WORKLOADS)
            the_world = workloads.world()
            for workload in st.workloads.values():
                fleet.register(st.cp, workload)
                workloads.start(sup, workload, the_world)
            if args.command == "e2e":
                fleet.apply(st.cp, fleet.documents())
                print("applied examples/fleet; waiting for it to converge:")
                took = fleet.converge(st.cp, CONVERGE_TIMEOUT_S)
                print(f"converged {took:.0f}s after the first apply")
                print(fleet.kubectl(st.cp, "get", "ic,ig,md,me,ms,mr", "-A"))
                return 0
                print(f"control plane up; kubeconfig {st.cp.admin_kubeconfig}")
                while True:
                    sup.check()
                    time.sleep(5)
        except KeyboardInterrupt:
            print("interrupted: stopping every process", file=sys.stderr)
            return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
