"""Container launcher: a thin, pinned wrapper over vLLM's OpenAI server.

Runs inside the serving image with only the standard library and vLLM's own
dependencies (no `peagle` import), and in local mode from the project venv.
Entry point: ``python3 -m peagle_serve serve``; library entry: ``launcher.run``.
"""
