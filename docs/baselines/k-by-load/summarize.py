"""Run from the repository root: python docs/baselines/k-by-load/summarize.py RUNS_DIR [SETTING=BANDS ...]

Reads kbyload.py's per-run records (RUNS_DIR/*-conditions.json) and prints, per setting and level, each figure
as the mean over the seeds with its 95% Student t interval, and the ratios the issue's verdicts rest on,
paired by seed (peagle/bench/intervals.py): every setting against speculation off and K=4, and a schedule
against the static K its band names at each closed-loop level (SETTING=BANDS, e.g.
`sched-corrected=1-2:4,3-16:0`: at concurrency c the band holding batch size c)."""

import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root
from peagle.bench.intervals import compare, mean_interval, ratio_interval

runs_dir = Path(sys.argv[1])
schedules = dict(arg.split("=", 1) for arg in sys.argv[2:])
records = [json.loads(path.read_text()) for path in sorted(runs_dir.glob("*-conditions.json"))]
by = defaultdict(dict)  # (setting, level) -> seed -> record
for record in records:
    by[(record["setting"], record["level"])][record["seed"]] = record
settings = sorted({setting for setting, _ in by}, key=lambda s: (s != "off", s != "K4", s))
levels = ["c1", "c4", "c8", "r0.5", "r1.0"]


def values(setting: str, level: str, figure: str, seeds: list[int]) -> list[float]:
    runs = by[(setting, level)]
    return [runs[seed][figure] if figure in runs[seed] else runs[seed]["server"][figure] for seed in seeds]


def common_seeds(*settings_: str, level: str) -> list[int]:
    seeds = None
    for setting in settings_:
        have = set(by.get((setting, level), {}))
        seeds = have if seeds is None else seeds & have
    return sorted(seeds or [])


def k_of_band(bands: str, batch: int) -> int:
    for band in bands.split(","):
        span, k = band.split(":")
        low, high = (int(x) for x in span.split("-"))
        if low <= batch <= high:
            return int(k)
    raise ValueError(f"{bands} has no band for {batch}")


def static_name(k: int) -> str:
    return "off" if k == 0 else f"K{k}"


print("| setting | level | output tok/s | goodput req/s | TTFT mean s | server queue s | server prefill s | load max |")
print("|---|---|---|---|---|---|---|---|")
for setting in settings:
    for level in levels:
        seeds = sorted(by.get((setting, level), {}))
        if not seeds:
            continue
        loads = [by[(setting, level)][seed]["host"]["load_1m_max"] for seed in seeds]
        cells = [
            mean_interval(values(setting, level, figure, seeds)).text(digits)
            for figure, digits in (
                ("output_tokens_per_s", 1),
                ("request_goodput_rps", 2),
                ("ttft_mean_s", 3),
                ("request_queue_time_mean_s", 3),
                ("request_prefill_time_mean_s", 3),
            )
        ]
        print(f"| {setting} | {level} | " + " | ".join(cells) + f" | {max(loads):.2f} |")

print()
print("Paired by seed (ratio of means per seed, 95% interval; verdict on the difference):")
for setting in settings:
    for other in ("off", "K4"):
        if setting == other:
            continue
        for level in levels:
            seeds = common_seeds(setting, other, level=level)
            if len(seeds) < 2:
                continue
            figure = "request_goodput_rps" if level.startswith("r") else "output_tokens_per_s"
            first, second = values(setting, level, figure, seeds), values(other, level, figure, seeds)
            verdict = compare(first, second).value
            try:
                ratio = ratio_interval(first, second).text(2)
            except ValueError:  # a run of the second setting at 0: the difference still decides
                ratio = "no ratio (a run at 0)"
            print(f"  {setting} / {other} at {level} ({figure}): {ratio}; {verdict}")
for setting, bands in schedules.items():
    for level, batch in (("c1", 1), ("c4", 4), ("c8", 8)):
        other = static_name(k_of_band(bands, batch))
        seeds = common_seeds(setting, other, level=level)
        if len(seeds) < 2:
            continue
        first = values(setting, level, "output_tokens_per_s", seeds)
        second = values(other, level, "output_tokens_per_s", seeds)
        ratio = ratio_interval(first, second)
        print(
            f"  {setting} against its band's static K ({other}) at {level}: {ratio.text(2)}; "
            f"{compare(first, second).value}"
        )
