"""OpenAI's Responses API over Chat Completions, for providers that do not offer it (pure).

``request.to_chat`` turns a ``POST /v1/responses`` body into a chat body (or refuses,
naming the parameter, what has no chat counterpart); ``answer.to_response`` turns the
chat answer into a ``Response``; ``stream.ResponsesStreamWriter`` turns a chat stream's
chunks into the Responses API's typed events. See docs/responses.md.
"""
