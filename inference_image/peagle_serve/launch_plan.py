"""Turn settings + ``SM_VLLM_*`` + pass-through arguments into one vLLM command line.

Everything here runs before the engine starts and raises ConfigError with every
problem it finds, so a bad deployment fails in seconds with a message that says
what to fix.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from . import vllm_args
from .contract import (
    ENV_HOST,
    ENV_PORT,
    ENV_SHUTDOWN_DRAIN_SECONDS,
    PER_REQUEST_SPEC_DECODE_METRICS_LEVEL,
    PER_REQUEST_SPEC_DECODE_METRICS_OPTION,
    decode_vllm_env,
    sm_vllm_name,
)
from .errors import ConfigError
from .model_layout import Speculation, drafter_context_warning, parse_speculative_config, resolve_target
from .settings import LauncherSettings

log = logging.getLogger("peagle_serve")

# `vllm serve`, vLLM's supported server command (vLLM's own SageMaker entrypoint,
# examples/online_serving/sagemaker-entrypoint.sh, ends in `exec vllm serve "${ARGS[@]}"`),
# run through vllm_cli so it also starts on the CPU build (see there). Not the old
# `python -m vllm.entrypoints.openai.api_server`: vLLM 0.32 warns "The `python -m
# vllm.entrypoints.openai.api_server` command is deprecated and may be removed in a future
# release." (vllm/entrypoints/openai/api_server.py).
VLLM_SERVE_COMMAND = ("-m", "peagle_serve.vllm_cli", "serve")

# Gates /ping until the self-check passed; JSON bodies on /invocations (readiness.py).
READINESS_MIDDLEWARE = "peagle_serve.readiness.ContainerContractMiddleware"
# The opt-in request log (request_log.py): added only when PEAGLE_REQUEST_LOG_SAMPLING_PERCENT > 0, so a container
# without it runs no code of it. vLLM takes several: "We accept multiple --middleware arguments"
# (vllm/entrypoints/launchers/cli_args.py, ``middleware``).
REQUEST_LOG_MIDDLEWARE = "peagle_serve.request_log.RequestLogMiddleware"

# Options the launcher owns: set through PEAGLE_* so it knows them too.
_LAUNCHER_OWNED = {
    "--port": ENV_PORT,
    "--host": ENV_HOST,
    "--shutdown-timeout": ENV_SHUTDOWN_DRAIN_SECONDS,
}
# Options that would blind the KPI line and the self-check.
_BLINDING = ("--disable-log-stats",)


@dataclass(frozen=True)
class LaunchPlan:
    argv: list[str]  # the full command, python executable first
    model: str
    served_model_name: str
    model_pair: str
    speculation: Speculation | None
    host: str
    port: int

    @property
    def speculative_tokens(self) -> int:
        return self.speculation.num_speculative_tokens if self.speculation else 0

    @property
    def local_url(self) -> str:
        # The launcher talks to vLLM over loopback whatever interface it listens on.
        host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        return f"http://{host}:{self.port}"


def build_launch_plan(settings: LauncherSettings, environ: Mapping[str, str], passthrough: list[str]) -> LaunchPlan:
    passthrough = list(passthrough)
    # `serve <model> ...` like `vllm serve`: a leading positional is the model.
    positional_model = None
    if passthrough and not passthrough[0].startswith("-"):
        positional_model = passthrough.pop(0)

    args = decode_vllm_env(environ) + passthrough
    problems = _refused_options(args)

    models, args = vllm_args.pop_option(args, "--model")
    model_value = positional_model or (models[-1] if models else None)
    try:
        model = resolve_target(model_value, settings)
    except ConfigError as error:
        problems += error.problems
        model = model_value or ""

    speculation = None
    spec_values, args = vllm_args.pop_option(args, "--speculative-config")
    if spec_values and spec_values[-1] is not None:
        max_num_seqs = vllm_args.option_value(args, "--max-num-seqs")
        try:
            speculation = parse_speculative_config(
                spec_values[-1],
                settings,
                max_num_seqs=int(max_num_seqs) if max_num_seqs and max_num_seqs.isdigit() else None,
            )
        except ConfigError as error:
            problems += error.problems
    if problems:
        raise ConfigError(problems)

    served_names = vllm_args.option_value(args, "--served-model-name")
    served_model_name = served_names or model
    max_model_len = vllm_args.option_value(args, "--max-model-len")
    if speculation is not None:
        warning = drafter_context_warning(speculation, _served_max_model_len(model, max_model_len))
        if warning:
            log.warning("%s", warning)
    return LaunchPlan(
        argv=_vllm_serve_argv(model, args, speculation, settings),
        model=model,
        served_model_name=served_model_name,
        model_pair=settings.model_pair or served_model_name,
        speculation=speculation,
        host=settings.host,
        port=settings.port,
    )


def _refused_options(args: list[str]) -> list[str]:
    """A problem for each vLLM option the launcher sets itself or that blinds its checks."""
    problems = []
    for option, setting in _LAUNCHER_OWNED.items():
        if vllm_args.has_option(args, option):
            problems.append(
                f"{option} is set by the launcher: use {setting} instead "
                f"({sm_vllm_name(option)} / a pass-through {option} is not allowed)"
            )
    for option in _BLINDING:
        if vllm_args.has_option(args, option):
            problems.append(
                f"{option} switches off the metrics the KPI line and the "
                f"speculation self-check read: remove {sm_vllm_name(option)}"
            )
    return problems


def _vllm_serve_argv(
    model: str, args: list[str], speculation: Speculation | None, settings: LauncherSettings
) -> list[str]:
    """The `vllm serve` command: the model, the operator's options, then the launcher's own."""
    # The model goes first, positionally: vLLM 0.32 moves a `--model` there itself and warns
    # "With `vllm serve`, you should provide the model as a positional argument or in a
    # config file instead of via the `--model` option. The `--model` option will be removed
    # in a future version." (vllm/utils/argparse_utils.py, FlexibleArgumentParser.parse_args).
    argv = [sys.executable, *VLLM_SERVE_COMMAND, model]
    argv += args
    if speculation is not None:
        argv += ["--speculative-config", json.dumps(speculation.config, separators=(",", ":"))]
        # Acceptance in every response (contract.py has vLLM's rule), switched on here and only here:
        # the launcher alone knows, after parsing SM_VLLM_*, pass-through and local mode alike, whether
        # speculation is on, and vLLM refuses the option without it. An operator's own
        # SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS (`detailed`, `none`) is kept as given.
        if not vllm_args.has_option(args, PER_REQUEST_SPEC_DECODE_METRICS_OPTION):
            argv += [PER_REQUEST_SPEC_DECODE_METRICS_OPTION, PER_REQUEST_SPEC_DECODE_METRICS_LEVEL]
    argv += [
        "--host",
        settings.host,
        "--port",
        str(settings.port),
        "--shutdown-timeout",
        str(settings.shutdown_drain_seconds),
        "--middleware",
        READINESS_MIDDLEWARE,
    ]
    if settings.request_log_sampling_percent > 0:
        argv += ["--middleware", REQUEST_LOG_MIDDLEWARE]
    return argv


def _served_max_model_len(model: str, max_model_len: str | None) -> int | None:
    if max_model_len and max_model_len.isdigit():
        return int(max_model_len)
    try:
        return json.loads((Path(model) / "config.json").read_text()).get("max_position_embeddings")
    except (OSError, json.JSONDecodeError):
        return None
