"""Keys and teams at runtime (docs/operations.md, "Keys and teams at runtime")."""
