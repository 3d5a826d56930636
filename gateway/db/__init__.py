"""The database layer. Every table module is imported here, so the shared metadata
(Alembic's target, the schema tests) always holds the whole schema."""

from gateway.db import budget_tables as budget_tables
from gateway.db import console_tables as console_tables
from gateway.db import governance_tables as governance_tables
from gateway.db import rollup_tables as rollup_tables
