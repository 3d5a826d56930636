"""Budgets held exactly in the database: reservation at admission, settlement at the end."""

from gateway.budgets.gate import BudgetUnavailable, DatabaseBudgets, hold_seconds_for

__all__ = ["BudgetUnavailable", "DatabaseBudgets", "hold_seconds_for"]
