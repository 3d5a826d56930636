"""The Gemini API (Google AI Studio) behind the OpenAI API.

adapter     the Adapter: requests out, answers and streams back (``GeminiAdapter``)
translate   OpenAI chat request -> generateContent request
answer      generateContent answer -> OpenAI answer (and the parts a stream is read with)
options     what becomes of each OpenAI chat field: translated, refused or dropped
tools       tools, tool_choice, response_format, and tool call ids carrying signatures
stream      streamGenerateContent events -> OpenAI chunks (``StreamTranslator``)
embeddings  OpenAI embeddings <-> batchEmbedContents
errors      Google error answers -> OpenAI error envelopes, RetryInfo -> Retry-After
"""

from gateway.upstream.gemini.adapter import GeminiAdapter

__all__ = ["GeminiAdapter"]
