"""OpenAI-compatible LLM gateway: authenticate, route, forward, price, record."""

__version__ = "0.1.0"
