"""Column types that behave the same on SQLite, PostgreSQL and MariaDB/MySQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Integer, LargeBinary, Numeric
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

# Money: exact decimals on PostgreSQL and MariaDB. SQLite has no decimal type:
# NUMERIC stores doubles there, and reads are rounded back to 10 places.
Money = Numeric(18, 10)

# A surrogate key that is BIGINT where it matters and still SQLite's rowid alias
# (only "INTEGER PRIMARY KEY" autoincrements on SQLite).
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UtcDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime in, an aware UTC datetime out, on every dialect.

    PostgreSQL stores ``timestamptz``. SQLite and MariaDB have no zone-aware
    type, so the value is stored as naive UTC (MariaDB as ``DATETIME(6)`` to keep
    microseconds) and tagged UTC again on the way out. A naive input is taken
    to be UTC already.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name in ("mysql", "mariadb"):
            from sqlalchemy.dialects import mysql  # loaded already: the engine's own dialect

            return dialect.type_descriptor(mysql.DATETIME(fsp=6))
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
            if dialect.name != "postgresql":
                value = value.replace(tzinfo=None)
        elif dialect.name == "postgresql":
            value = value.replace(tzinfo=UTC)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class LongBinary(TypeDecorator[bytes]):
    """Bytes of any size: ``LONGBLOB`` on MariaDB/MySQL (whose ``BLOB`` stops at 64 KiB),
    the dialect's binary type elsewhere. A type of its own rather than a variant of
    ``LargeBinary`` so that SQLAlchemy's MySQL dialect is imported only on MySQL."""

    impl = LargeBinary
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name in ("mysql", "mariadb"):
            from sqlalchemy.dialects import mysql

            return dialect.type_descriptor(mysql.LONGBLOB())
        return dialect.type_descriptor(LargeBinary())
