"""Anthropic's Messages API in front (``POST /v1/messages``), pure parts.

Native to Anthropic providers (the body goes as the client sent it, see
gateway/upstream/anthropic/native.py); for every other provider ``request.to_chat`` turns
the body into a chat body (or refuses, naming the parameter, what has no chat
counterpart), ``answer.to_message`` turns the chat answer into a message and
``stream.MessagesStreamWriter`` a chat stream into Anthropic's events; ``errors`` writes
every error in Anthropic's envelope. See docs/messages.md.
"""
