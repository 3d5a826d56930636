"""Console sign-outs in the database (``console_revoked_sessions``), read by every process.

A session cookie is signed and carries its own expiry, so it needs no server-side state
to be accepted; what a signature cannot say is that its session was signed out. A
sign-out writes the session's id here, and every request with a session cookie reads
one row by its primary key: exact across workers and replicas the moment the sign-out
commits. Rows whose session has expired are deleted by each sign-out, so the table
holds at most the sign-outs of one ``auth.consoleSessionHours``.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, insert, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.console_tables import console_revoked_sessions as revoked
from gateway.domain.errors import SessionCheckFailed

_UNREACHABLE = "The console cannot check its sessions: the database is unreachable."


class SessionRevocations:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def is_revoked(self, session_id: str) -> bool:
        query = select(revoked.c.session_id).where(revoked.c.session_id == session_id)
        try:
            async with self._engine.connect() as connection:
                found = (await connection.execute(query)).first()
        except (SQLAlchemyError, OSError) as error:
            raise SessionCheckFailed(_UNREACHABLE) from error
        return found is not None

    async def revoke(self, session_id: str, expires_at: datetime, now: datetime) -> None:
        """List ``session_id`` until ``expires_at``; delete the rows expired by ``now``."""
        try:
            async with self._engine.begin() as connection:
                await connection.execute(delete(revoked).where(revoked.c.expires_at <= now))
                await connection.execute(
                    insert(revoked).values(session_id=session_id, expires_at=expires_at)
                )
        except IntegrityError:
            return  # signed out at the same moment by another request: listed already
        except (SQLAlchemyError, OSError) as error:
            raise SessionCheckFailed(_UNREACHABLE) from error
