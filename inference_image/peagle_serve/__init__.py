"""Container launcher: a thin, pinned wrapper over vLLM's OpenAI server."""
