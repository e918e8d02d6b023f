"""Run from the repository root: python docs/baselines/capacity-partial/without-prefix-cache/without_prefix_cache.py OUT K [K ...].

The capacity search of this folder again, with vLLM's prefix cache off (prefix_cache.py shows why: on vLLM's
CPU build a K=0 server serves 128 tokens of a repeated ~164-token prompt from the cache and a speculating one
none): one `peagle local --pair partial -k K -- --no-enable-prefix-caching` server per K, then `peagle capacity
--url` against it with the settings of the first search (chatbot SLO and sampling, 128 output tokens, start
at 0.5 req/s) and a 420 s time budget, results in OUT/K<K>."""

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))  # the repository root
from peagle.local.served import serve_local

out, ks = Path(sys.argv[1]), [int(k) for k in sys.argv[2:]]
out.mkdir(parents=True, exist_ok=True)
for k in ks:
    options = ["--pair", "partial", "--speculative-tokens", str(k), "--", "--no-enable-prefix-caching"]
    with serve_local(options, log_path=out / f"server-K{k}.log", label=f"K={k}", parent="capacity") as url:
        command = [sys.executable, "-m", "peagle", "capacity", "--url", url, "--profile", "chatbot"]
        command += ["--max-tokens", "128", "--start-rate", "0.5", "--time-budget", "420", "--out", str(out / f"K{k}")]
        subprocess.run(command, check=False)
