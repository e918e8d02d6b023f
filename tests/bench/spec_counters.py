"""vLLM /metrics snapshots with spec-decode counters, for the bench tests."""

from __future__ import annotations

from peagle_serve.metrics import MetricsSnapshot


def spec_metrics(drafts: int, draft_tokens: int, accepted: int, per_position: list[int]) -> MetricsSnapshot:
    labels = 'engine="0",model_name="m"'
    lines = [
        f"vllm:spec_decode_num_drafts_total{{{labels}}} {drafts}",
        f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {draft_tokens}",
        f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {accepted}",
    ]
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{i}"}} {count}'
        for i, count in enumerate(per_position)
    ]
    return MetricsSnapshot.parse("\n".join(lines) + "\n")
