"""Packaging that pyproject.toml cannot express: the top-level ``alembic/`` folder ships
inside the package, as ``gateway.db.migrations``.

The migration scripts sit at the repository root so that ``alembic upgrade head`` works
there. As a folder without ``__init__.py`` it would otherwise install as a top-level
``alembic`` and shadow the Alembic library; mapped into the package, an installed
gateway finds its scripts whatever the working directory.
"""

from setuptools import find_namespace_packages, setup

MIGRATIONS = "gateway.db.migrations"

setup(
    packages=[
        *find_namespace_packages(include=["gateway", "gateway.*"], exclude=["*.__pycache__"]),
        MIGRATIONS,
        f"{MIGRATIONS}.versions",
    ],
    package_dir={MIGRATIONS: "alembic"},
    package_data={"gateway.api.static": ["*.css", "*.js", "*.svg"], MIGRATIONS: ["script.py.mako"]},
)
