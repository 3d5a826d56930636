"""/v1/messages to Claude on AWS Bedrock, translated (through chat to Converse): the
anthropic SDK → the gateway → a fake Bedrock. Thinking goes as Claude's thinking, its
signed blocks come back as thinking blocks, and a tool loop sends them back signed."""

from __future__ import annotations

from typing import Any

import anthropic

from tests.integration.bedrock_support import CLAUDE, aws_environment, bedrock, gateway
from tests.support.fake_bedrock import Answer, FakeBedrock
from tests.support.gateway import TEST_KEY, RunningGateway

__all__ = ["aws_environment", "bedrock", "gateway"]

LOOKUP: dict[str, Any] = {
    "name": "lookup",
    "description": "Look a word up.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
}
ASK: list[Any] = [{"role": "user", "content": "What is an owl?"}]


def test_a_thinking_tool_loop_through_the_sdk_sends_the_signed_thinking_back(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    call = {"toolUseId": "tooluse_t", "name": "lookup", "input": {"q": "owl"}}
    bedrock.script(
        CLAUDE,
        Answer(reasoning="I should look.", text="", tool_uses=[call]),
        Answer(text="An owl is a bird."),
    )
    sdk = anthropic.Anthropic(base_url=gateway.url, api_key=TEST_KEY, max_retries=0)
    thinking: Any = {"type": "enabled", "budget_tokens": 2048}
    with sdk.messages.stream(
        model="claude-chat", max_tokens=4000, thinking=thinking, tools=[LOOKUP], messages=ASK
    ) as stream:
        first = stream.get_final_message()
    kinds = [b.type for b in first.content]
    assert kinds == ["thinking", "tool_use"], first.content
    thought = first.content[0]
    assert thought.type == "thinking" and thought.signature == "sig-1"
    assert thought.thinking == "I should look."
    use = first.content[1]
    assert use.type == "tool_use" and use.input == {"q": "owl"}
    second = sdk.messages.create(
        model="claude-chat",
        max_tokens=4000,
        thinking=thinking,
        tools=[LOOKUP],
        messages=[
            *ASK,
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "a bird"}],
            },
        ],
    )
    assert second.content[-1].type == "text" and second.content[-1].text == "An owl is a bird."
    assert bedrock.refused == []
    sent = bedrock.sent("converse")[-1]
    assert sent.body["additionalModelRequestFields"]["thinking"]["type"] == "enabled"
    assert sent.body["messages"][1]["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "I should look.", "signature": "sig-1"}}
    }
