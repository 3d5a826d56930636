"""Google Cloud Vertex AI behind the OpenAI API: Gemini and Claude models.

adapter     the Adapter (``VertexAdapter``): Gemini models through the Gemini
            translation, Claude models through the Anthropic one, embeddings via :predict
auth        access tokens from google-auth (the optional extra ``[vertex]``)
urls        which publisher serves a model, and its URL
embeddings  OpenAI embeddings <-> :predict
"""

from gateway.upstream.vertex.adapter import VertexAdapter

__all__ = ["VertexAdapter"]
