"""Engine only, in one process (no HTTP, no API server, no second process): what vLLM's engine itself does with
one speculation setting of the local partial pair. Run from the repository root with the serving venv:

    python docs/baselines/k-by-load/engine-only/engine.py NAME SPEC_JSON [--correct]

SPEC_JSON: {} for speculation off, else the speculative config's K and schedule, e.g.
'{"num_speculative_tokens": 4, "num_speculative_tokens_per_batch_size": [[1, 2, 4], [3, 16, 0]]}'; --correct
applies peagle_serve's dynamic-k-draft-width correction in this process. Prints one JSON line:

- batch8: 8 prompts of 64 characters at once, T 0.7 top_p 0.9: the first token (the median of 3), then 64
  tokens each (output tokens/s, the median of 3), and the drafter's first-pass widths and K over those runs;
- join: a request joining 7 running ones: engine steps and seconds to its first token (4 trials), and the
  median decode step before it joined.
"""

import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # the engine core in this process
sys.path.insert(0, str(REPO / "inference_image"))

from vllm import LLM, SamplingParams  # noqa: E402
from vllm.v1.spec_decode.llm_base_proposer import SpecDecodeBaseProposer  # noqa: E402

from peagle_serve import vllm_corrections  # noqa: E402

NAME, SPEC = sys.argv[1], json.loads(sys.argv[2])
widths, ks = Counter(), Counter()
first_pass = SpecDecodeBaseProposer.build_model_inputs_first_pass


def counted_first_pass(self, num_tokens, num_input_tokens, mm_embed_inputs):
    widths[num_tokens] += 1
    ks[self.num_speculative_tokens] += 1
    return first_pass(self, num_tokens, num_input_tokens, mm_embed_inputs)


SpecDecodeBaseProposer.build_model_inputs_first_pass = counted_first_pass
vllm_corrections._apply_expand_kernel()  # the CPU build's sampled-verification faults, as the launcher corrects them
vllm_corrections._apply_top_k_empty()
if "--correct" in sys.argv:
    vllm_corrections._apply_dynamic_k_draft_width()
root = REPO / "local-models/partial-pair"
engine_args = {
    "model": str(root / "target"),
    "dtype": "float32",
    "max_model_len": 1024,
    "enforce_eager": True,
    "max_num_seqs": 16,
    "kv_cache_memory_bytes": 452984832,
    "max_num_batched_tokens": 2176,
    "seed": 0,
}
if SPEC:
    engine_args["speculative_config"] = {
        "method": "eagle3",
        "model": str(root / "drafter"),
        "parallel_drafting": True,
        **SPEC,
    }
llm = LLM(**engine_args)
rng = random.Random(0)


def prompts(count: int) -> list[str]:
    return ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(64)) for _ in range(count)]


def sampling(tokens: int) -> SamplingParams:
    return SamplingParams(temperature=0.7, top_p=0.9, max_tokens=tokens, ignore_eos=True, seed=1)


def batch8() -> dict:
    llm.generate(prompts(8), sampling(64), use_tqdm=False)
    widths.clear()
    ks.clear()
    first, full = [], []
    for _ in range(3):
        start = time.perf_counter()
        llm.generate(prompts(8), sampling(1), use_tqdm=False)
        first.append(time.perf_counter() - start)
        start = time.perf_counter()
        llm.generate(prompts(8), sampling(64), use_tqdm=False)
        full.append(time.perf_counter() - start)
    return {
        "first_token_s": sorted(first)[1],
        "tokens_per_s": 8 * 64 / sorted(full)[1],
        "drafter_first_pass_widths": widths.most_common(4),
        "k_per_pass": ks.most_common(3),
    }


def join() -> list[tuple[int, float, float]]:
    engine, trials = llm.llm_engine, []
    for trial in range(4):
        running = [f"{trial}-{index}" for index in range(7)]
        for request in running:
            engine.add_request(request, prompts(1)[0], sampling(400))
        steps = []
        for _ in range(6):
            start = time.perf_counter()
            engine.step()
            steps.append(time.perf_counter() - start)
        engine.add_request(f"{trial}-new", prompts(1)[0], sampling(8))
        start, count, first = time.perf_counter(), 0, None
        while first is None:
            outputs = engine.step()
            count += 1
            if any(out.request_id == f"{trial}-new" and out.outputs[0].token_ids for out in outputs):
                first = time.perf_counter() - start
        trials.append((count, round(first, 3), round(sorted(steps)[3], 3)))
        engine.abort_request([*running, f"{trial}-new"])
        while engine.has_unfinished_requests():
            engine.step()
    return trials


print(json.dumps({"name": NAME, "batch8": batch8(), "join (steps, first token s, decode step s)": join()}))
