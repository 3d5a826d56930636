"""AWS Bedrock Runtime behind the OpenAI chat and embeddings APIs.

adapter     the Adapter: Converse, ConverseStream, InvokeModel(WithResponseStream)
auth        a Bedrock API key, or AWS credentials signed with SigV4 by botocore
translate   OpenAI chat request -> Converse request, Converse answer -> OpenAI answer
options     what becomes of each OpenAI chat field: translated, refused or dropped
tools       tools, tool_choice and response_format as Converse's toolConfig
stream      ConverseStream events -> OpenAI chunks (``StreamTranslator``)
events      AWS event-stream frames, decoded by botocore
embeddings  OpenAI embeddings <-> Titan and Cohere InvokeModel bodies
errors      Bedrock exceptions -> OpenAI error envelopes
native      /v1/messages to Claude natively: the InvokeModel body, the stream chunks

botocore (the ``bedrock`` extra) is imported on a bedrock provider's first call only.
"""

from gateway.upstream.bedrock.adapter import BedrockAdapter

__all__ = ["BedrockAdapter"]
