"""An inference component's container environment serves: the scale-to-zero example's component
environment, with its weights mount pointed at the tiny pair, runs through the container's own
entrypoint (launcher, self-check, vLLM), answers /invocations with drafts accepted, and its KPI
lines name the component. Only CPU stand-ins differ from the GPU: dtype, KV cache dtype, memory
share and context length, which the GPU plan sizes for L40S."""

from __future__ import annotations

import sys
import time

import pytest
from local_engine import REPO_ROOT, free_port, spawn
from serving_requests import post_json

from peagle.planning.container_env import container_environment
from peagle.planning.deployment_rules import plan_checked_deployment
from peagle.settings import load_deployment_config
from peagle_serve.contract import MODEL_MOUNT

pytestmark = pytest.mark.engine

CPU_STAND_INS = {
    "SM_VLLM_DTYPE": "float32",
    "SM_VLLM_ENFORCE_EAGER": "true",
    "SM_VLLM_GPU_MEMORY_UTILIZATION": "0.1",
    "SM_VLLM_MAX_MODEL_LEN": "1024",
    "PEAGLE_KPI_INTERVAL_SECONDS": "2",
}


def test_the_scale_to_zero_components_environment_serves_and_reports_under_its_name(tiny_pair):
    config = load_deployment_config(REPO_ROOT / "deployments" / "scale-to-zero.yaml")
    ((endpoint, component, plan),) = plan_checked_deployment(config).variant_plans()
    environment = container_environment(plan, variant_name=component, endpoint_name=endpoint)
    env = {key: value.replace(MODEL_MOUNT, str(tiny_pair.root)) for key, value in environment.items()}
    env.pop("SM_VLLM_KV_CACHE_DTYPE")  # fp8 KV cache is the L40S plan's; the CPU build keeps the default
    port = free_port()
    env.update(CPU_STAND_INS, PEAGLE_MODEL_ROOT=str(tiny_pair.root), PEAGLE_PORT=str(port))

    server = spawn([sys.executable, "-m", "peagle_serve", "serve"], port=port, env=env)
    try:
        server.wait_until_ready()  # after the speculation self-check
        status, body = post_json(
            server.url + "/invocations", {"prompt": "Hello", "max_tokens": 16, "temperature": 0}, timeout=120
        )
        assert status == 200, body
        assert body["usage"]["completion_tokens"] == 16
        speculation = body["metrics"]["speculative_decoding"]
        assert speculation["num_spec_tokens"] == plan.speculative_tokens == 5
        assert speculation["num_accepted_draft_tokens"] > 0
        deadline = time.monotonic() + 30
        while not server.kpi_records() and time.monotonic() < deadline:
            time.sleep(0.5)
        (record, *_) = server.kpi_records()
        assert (record["endpoint_name"], record["variant_name"]) == ("peagle-s2z-endpoint", "peagle-s2z-primary")
    finally:
        server.stop()
