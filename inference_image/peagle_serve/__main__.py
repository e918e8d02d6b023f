"""Container entrypoint: ``python3 -m peagle_serve serve [extra vLLM options...]``.

SageMaker starts the container as ``docker run <image> serve``; anything after
``serve`` is passed to vLLM unchanged (after the ``SM_VLLM_*`` options).
``--print-settings`` prints the launcher's settings table and exits.
"""

from __future__ import annotations

import os
import sys

from .launcher import run
from .settings import settings_table_markdown


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--print-settings"]:
        print(settings_table_markdown())
        return 0
    if args[:1] == ["serve"]:
        args = args[1:]
    elif args[:1] == ["train"]:
        print("peagle_serve: this image only serves (SageMaker hosting); `train` is not supported", file=sys.stderr)
        return 2
    return run(args, os.environ)


if __name__ == "__main__":
    sys.exit(main())
