"""``python -m bench``: measure every function on its reference workloads and write the results.

python -m bench                      # everything; results into bench/results/
python -m bench --quick              # a smoke run in seconds; results into .cache/bench/
python -m bench --only ModelService  # one function (by XR kind)
python -m bench --profile InferenceGateway   # pyinstrument profile of its largest workload
"""

import argparse
from collections.abc import Sequence
from pathlib import Path

from bench import report
from bench.run import Settings, run, settle
from bench.stats import Budget
from bench.workloads import SUITE
from fleetgate.core.runner import run_composer
from sim import catalog

REPO = Path(__file__).resolve().parent.parent

FULL = Settings(
    call=Budget(seconds=0.8, min_calls=20, max_calls=400),
    wire=Budget(seconds=0.2, min_calls=20, max_calls=400),
    grpc=Budget(seconds=0.8, min_calls=20, max_calls=300),
    cold_starts=21,
    concurrency_seconds=3.0,
    out=REPO / "bench" / "results",
)
QUICK = Settings(
    call=Budget(seconds=0.05, min_calls=3, max_calls=20, warmup=1),
    wire=Budget(seconds=0.05, min_calls=3, max_calls=20, warmup=1),
    grpc=Budget(seconds=0.05, min_calls=3, max_calls=20, warmup=1),
    cold_starts=1,
    concurrency_seconds=0.3,
    out=REPO / ".cache" / "bench",
)


def profile(kind: str, out: Path) -> None:
    """A pyinstrument profile of the function on its largest workload: profile before optimising."""
    try:
        from pyinstrument import Profiler  # noqa: PLC0415 - a dev tool, only for --profile
    except ImportError:
        raise SystemExit("--profile needs pyinstrument: pip install -e '.[dev]'") from None
    registry = catalog.registry()
    settled = settle(SUITE[kind][-1](), registry)
    compose = registry[kind].compose
    profiler = Profiler(interval=0.0005)
    profiler.start()
    for _ in range(10):
        run_composer(compose, settled.request)
    profiler.stop()
    text = profiler.output_text(unicode=False, color=False)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"profile-{registry[kind].name}.txt"
    path.write_text(text)
    print(text)
    print(f"written to {path}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run; results not committed")
    parser.add_argument("--only", action="append", choices=sorted(SUITE), help="XR kind(s)")
    parser.add_argument("--out", type=Path, help="where results go")
    parser.add_argument("--profile", choices=sorted(SUITE), help="profile one function instead")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    out = args.out or settings.out
    if args.profile:
        profile(args.profile, out)
        return
    results = run(args.only or list(SUITE), settings)
    json_path, md_path = report.write(results, out)
    print(md_path.read_text())
    print(f"results: {json_path}")


if __name__ == "__main__":
    main()
