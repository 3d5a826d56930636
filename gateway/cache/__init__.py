"""The response cache: whole answers keyed by configuration and request body."""

from gateway.cache.service import StoredResponseCache, make_store

__all__ = ["StoredResponseCache", "make_store"]
