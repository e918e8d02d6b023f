"""SSE decoding and chunk interpretation under arbitrary byte splits."""

from __future__ import annotations

import itertools

import pytest
from sagemaker_wire import vllm_sse_stream

from peagle.client.sse import DONE_SENTINEL, SSEDecoder
from peagle.client.stream_chunks import parse_stream_chunk

TEXT_PIECES = ["Grüße", " aus", " 日本", " 🚀!"]


def decode_all(chunks: list[bytes]) -> list[str]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + list(decoder.flush())


def text_of(events: list[str]) -> str:
    return "".join(parse_stream_chunk(event).text for event in events if event != DONE_SENTINEL)


def test_every_two_way_split_gives_the_same_events():
    stream = vllm_sse_stream(TEXT_PIECES)
    whole = decode_all([stream])
    assert whole[-1] == DONE_SENTINEL
    assert text_of(whole) == "".join(TEXT_PIECES)
    for cut in range(1, len(stream)):  # includes cuts inside every multi-byte character
        assert decode_all([stream[:cut], stream[cut:]]) == whole


def test_byte_at_a_time_and_three_way_splits():
    stream = vllm_sse_stream(TEXT_PIECES, chat=True)
    whole = decode_all([stream])
    assert decode_all([bytes([byte]) for byte in stream]) == whole
    emoji = stream.index("🚀".encode())
    for first, second in itertools.combinations(range(emoji - 3, emoji + 5), 2):
        assert decode_all([stream[:first], stream[first:second], stream[second:]]) == whole


def test_crlf_comments_multiline_data_and_missing_final_blank_line():
    raw = (
        b': keep-alive\r\ndata: {"choices": [{"text": "a"}]}\r\n\r\nevent: x\ndata: line1\ndata: line2\n\ndata: [DONE]'
    )
    assert decode_all([raw]) == ['{"choices": [{"text": "a"}]}', "line1\nline2", DONE_SENTINEL]


def test_chat_reasoning_usage_and_finish_reason():
    chunk = parse_stream_chunk(
        '{"choices": [{"index": 0, "delta": {"reasoning_content": "think", "content": "answer"}, "finish_reason": "stop"}]}'
    )
    assert (chunk.text, chunk.reasoning, chunk.finish_reason) == ("answer", "think", "stop")
    usage = parse_stream_chunk('{"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 9}}').usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (5, 9, 14)


@pytest.mark.parametrize(
    "data",
    [
        '{"error": {"message": "engine died", "type": "InternalServerError", "code": 500}}',
        '{"object": "error", "message": "engine died"}',
    ],
)
def test_mid_stream_error_chunks_are_recognised(data):
    assert parse_stream_chunk(data).error == "engine died"


def test_garbage_is_an_error_not_a_crash():
    assert "unparseable" in parse_stream_chunk("{not json").error
