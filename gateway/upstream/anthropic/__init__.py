"""Anthropic's Messages API behind the OpenAI chat API.

adapter    the Adapter: requests out, answers and streams back (``AnthropicAdapter``)
translate  OpenAI chat request -> Messages request, Messages answer -> OpenAI answer
options    what becomes of each OpenAI chat field: translated, refused or dropped
tools      tools, tool_choice and response_format as Anthropic tools
stream     Anthropic's stream events -> OpenAI chunks (``StreamTranslator``)
errors     Anthropic error answers and events -> OpenAI error envelopes
"""

from gateway.upstream.anthropic.adapter import AnthropicAdapter

__all__ = ["AnthropicAdapter"]
