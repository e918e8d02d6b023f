"""Incremental Server-Sent Events decoding for vLLM's streamed responses.

Transports hand over bytes exactly as they arrive: a SageMaker PayloadPart or an
HTTP chunk can end anywhere, in the middle of an SSE line or of a multi-byte UTF-8
character. The decoder therefore buffers raw bytes and decodes only complete lines,
so a character split across two chunks is decoded once it is whole.
"""

from __future__ import annotations

from collections.abc import Iterator

DONE_SENTINEL = "[DONE]"


class SSEDecoder:
    """Feed bytes, get the ``data`` payload of each complete event.

    Follows the parts of the SSE format that vLLM uses: ``\\n`` or ``\\r\\n`` line
    ends, ``data:`` fields (several in one event are joined with ``\\n``), comment
    lines starting with ``:``, and a blank line ending each event. Other fields
    (``event:``, ``id:``, ``retry:``) are ignored.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._data_lines: list[str] = []

    def feed(self, chunk: bytes) -> Iterator[str]:
        self._buffer.extend(chunk)
        while True:
            newline = self._buffer.find(b"\n")
            if newline < 0:
                return
            raw_line = bytes(self._buffer[:newline])
            del self._buffer[: newline + 1]
            line = raw_line.removesuffix(b"\r").decode("utf-8")
            event_data = self._take_line(line)
            if event_data is not None:
                yield event_data

    def flush(self) -> Iterator[str]:
        """End of stream: a last event without its trailing blank line still counts."""
        if self._buffer:
            line = bytes(self._buffer).removesuffix(b"\r").decode("utf-8")
            self._buffer.clear()
            event_data = self._take_line(line)
            if event_data is not None:
                yield event_data
        if self._data_lines:
            yield self._dispatch()

    def _take_line(self, line: str) -> str | None:
        if line == "":
            return self._dispatch() if self._data_lines else None
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if field == "data":
            self._data_lines.append(value.removeprefix(" "))
        return None

    def _dispatch(self) -> str:
        data = "\n".join(self._data_lines)
        self._data_lines = []
        return data
