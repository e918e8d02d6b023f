"""The start fails, loudly, when speculation is configured but the drafter is unused.

A realistic way to get there: a drafter whose context (max_position_embeddings) is
shorter than the prompts. vLLM loads it, raises its rotary cache to the target's length,
starts, answers requests, and for longer sequences skips the drafter: its (zeroed)
drafts are counted and all rejected. The launcher's warm-up must catch that, exit
non-zero, and never let /ping say 200.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys

import pytest
from local_engine import free_port, spawn

from peagle.cli import build_parser
from peagle.local.cli import local_environment
from peagle_serve.errors import EXIT_SELF_CHECK_FAILED, SelfCheckError
from peagle_serve.self_check import WarmUp, _judge_sampled
from peagle_serve.settings import load_settings

pytestmark = pytest.mark.engine


def test_self_check_fails_a_start_whose_drafter_is_not_in_use(tiny_pair, tmp_path):
    drafter = tmp_path / "short-context-drafter"
    shutil.copytree(tiny_pair.drafter_dir, drafter)
    config = json.loads((drafter / "config.json").read_text())
    config["max_position_embeddings"] = 16  # the warm-up prompt is ~80 tokens
    (drafter / "config.json").write_text(json.dumps(config))

    port = free_port()
    options = build_parser().parse_args(["local", "--models-dir", str(tiny_pair.root), "--port", str(port)])
    env = local_environment(options, tiny_pair, {})
    env["SM_VLLM_SPECULATIVE_CONFIG"] = json.dumps(
        {
            "method": "eagle3",
            "model": str(drafter),
            "num_speculative_tokens": 4,
            "parallel_drafting": True,
        }
    )
    # The container's own entrypoint, as SageMaker runs it.
    server = spawn([sys.executable, "-m", "peagle_serve", "serve"], port=port, env=env)
    try:
        returncode = server.wait_for_exit(timeout=240)
    finally:
        server.stop()
    log = server.launcher_log()
    assert returncode == EXIT_SELF_CHECK_FAILED, server.output_tail()
    assert "PEAGLE SELF-CHECK FAILED" in log and "the drafter is not in use" in log
    assert "the drafter's context is 16 tokens but the server accepts 1024" in log  # the static hint
    # vLLM raised the drafter's position limit to the target's, and still did not draft:
    # the warning above is needed (model_layout.drafter_context_warning cites the source).
    assert (
        "Overriding draft model max_position_embeddings from 16 to the target model's max_model_len (1024)"
    ) in "\n".join(server.stdout_lines + server.stderr_lines)
    assert 200 not in server.ping_statuses_before_ready


@pytest.mark.engine
def test_the_self_check_reports_acceptance_greedy_and_at_the_profiles_sampling(local_server):
    log = local_server.launcher_log()
    # `peagle local` serves the chatbot profile's sampling by default (--override-generation-config).
    assert "greedy: 3 drafts, mean acceptance length 5.00" in log, log
    assert "sampled at the served defaults, temperature 0.7, top_p 0.9: mean acceptance length 5.00" in log, log


def _warm_up(drafts: int, accepted: int, k: int = 4) -> WarmUp:
    return WarmUp(drafts=drafts, draft_tokens=drafts * k, accepted=accepted, after=None)


@pytest.mark.parametrize("action", ["warn", "fail"])
def test_a_sampled_acceptance_collapse_warns_or_fails_as_set(action, caplog):
    settings = dataclasses.replace(
        load_settings({}), self_check_sampled_collapse=action, self_check_sampled_min_ratio=0.5
    )
    greedy, held, collapsed = _warm_up(10, 40), _warm_up(12, 30), _warm_up(30, 4)
    assert "0.62 x greedy's 1.00" in _judge_sampled(held, greedy, "sampled", settings)  # 30/48 vs 40/40
    if action == "fail":
        with pytest.raises(SelfCheckError, match="PEAGLE SAMPLED ACCEPTANCE COLLAPSED: sampled: .* 0.03 x greedy"):
            _judge_sampled(collapsed, greedy, "sampled", settings)
    else:
        assert "(COLLAPSED, see above)" in _judge_sampled(collapsed, greedy, "sampled", settings)
        assert "PEAGLE SAMPLED ACCEPTANCE COLLAPSED" in caplog.text and "serving on" in caplog.text
