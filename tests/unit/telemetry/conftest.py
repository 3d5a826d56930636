from tests.unit.db.scratch import database_url, engine

__all__ = ["database_url", "engine"]
