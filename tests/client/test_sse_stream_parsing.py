"""SSE decoding and chunk interpretation under arbitrary byte splits."""

from __future__ import annotations

import itertools
import json

import pytest
from sagemaker_wire import RECORDED_SPEC_DECODE, recorded_vllm_stream, vllm_sse_stream

from peagle.client.sse import DONE_SENTINEL, SSEDecoder
from peagle.client.stream_chunks import SpecDecodeMetrics, parse_stream_chunk

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


def test_the_usage_chunk_carries_the_answers_acceptance():
    events = decode_all([recorded_vllm_stream()])
    chunks = [parse_stream_chunk(event) for event in events if event != DONE_SENTINEL]

    assert [chunk.spec_decode_metrics is not None for chunk in chunks] == [False] * (len(chunks) - 1) + [True]
    spec = chunks[-1].spec_decode_metrics
    assert spec == SpecDecodeMetrics(
        mean_acceptance_length=RECORDED_SPEC_DECODE["mean_acceptance_length"],
        draft_acceptance_rate=RECORDED_SPEC_DECODE["draft_acceptance_rate"],
        acceptance_histogram=tuple(RECORDED_SPEC_DECODE["acceptance_histogram"]),
        num_spec_steps=RECORDED_SPEC_DECODE["num_spec_steps"],
        num_accepted_draft_tokens=RECORDED_SPEC_DECODE["num_accepted_draft_tokens"],
        num_draft_tokens=RECORDED_SPEC_DECODE["num_draft_tokens"],
        num_spec_tokens=RECORDED_SPEC_DECODE["num_spec_tokens"],
    )
    # Steps that accepted draft position i: those that accepted more than i drafts.
    assert SpecDecodeMetrics(1 + 11 / 6, 11 / 24, (1, 2, 0, 3, 0), 6, 11, 24, 4).accepted_per_position == [5, 3, 3, 0]


@pytest.mark.parametrize(
    "metrics",
    [{}, {"speculative_decoding": None}, {"speculative_decoding": {"mean_acceptance_length": 2.0}}, "x"],
    ids=["no-speculation", "null", "another-shape", "not-an-object"],
)
def test_an_answer_without_usable_acceptance_has_none_and_still_parses(metrics):
    chunk = parse_stream_chunk(json.dumps({"choices": [], "usage": {"prompt_tokens": 1}, "metrics": metrics}))

    assert chunk.spec_decode_metrics is None and chunk.error is None and chunk.usage.prompt_tokens == 1
