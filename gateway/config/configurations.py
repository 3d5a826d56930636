"""Phase 2 for ``configurations``: each entry checked and resolved to a ``Configuration``
(with one per model under ``exposeModels``), and every fallback checked: it names a known
configuration other than its own, and no fallbacks form a cycle. Pure.
"""

from __future__ import annotations

from typing import Any

from gateway.config.errors import Problems, child, item
from gateway.config.references import Ids, failed_ids, parsed_entries
from gateway.config.schema import ConfigurationSchema, CriteriaSchema, FileSchema
from gateway.config.sections import to_budget, to_rate_limit
from gateway.domain.model import CacheSpec, Configuration, ConfigurationMode, Criteria


def resolve_configurations(
    file: FileSchema, raw: Any, models: Ids, problems: Problems
) -> tuple[dict[str, Configuration], Ids]:
    """Explicit configurations in YAML order, then (exposeModels) one per model.

    An explicit configuration whose id equals a model id wins over the
    exposed one: it is the more specific statement.
    """
    failed = failed_ids(raw, ["configurations"], file.configurations)
    if file.expose_models:
        failed |= failed_ids(raw, ["models"], file.models)
    ids = Ids("configuration", problems, failed)
    configurations: dict[str, Configuration] = {}
    for index, entry in parsed_entries(file.configurations):
        path = item("configurations", index)
        if ids.claim(path, entry.id):
            configurations[entry.id] = _configuration(entry, path, models, problems)
    if file.expose_models:
        for index, model in parsed_entries(file.models):
            if model.id not in configurations and model.id not in failed:
                configurations[model.id] = Configuration(
                    id=model.id, mode=ConfigurationMode.FIXED, model=model.id
                )
                ids.claim(item("models", index), model.id)
    return configurations, ids


def _configuration(
    entry: ConfigurationSchema, path: str, models: Ids, problems: Problems
) -> Configuration:
    if entry.mode is ConfigurationMode.FIXED:
        if entry.model is None:
            problems.add(child(path, "model"), "required when mode is 'fixed'")
        else:
            models.check(child(path, "model"), entry.model)
        if entry.criteria is not None:
            problems.add(child(path, "criteria"), "not allowed when mode is 'fixed'")
    elif entry.model is not None:
        problems.add(child(path, "model"), "not allowed when mode is 'criteria'")
    return Configuration(
        id=entry.id,
        mode=entry.mode,
        model=entry.model,
        policy_mode=entry.policy_mode,
        fallback=tuple(entry.fallback),
        criteria=_criteria(entry.criteria),
        budget=to_budget(entry.budget),
        cache=_cache_spec(entry),
        operation_capability_enforcement=entry.operation_capability_enforcement,
        rate_limit=to_rate_limit(entry.rate_limit),
    )


def _cache_spec(entry: ConfigurationSchema) -> CacheSpec | None:
    if entry.cache is None:
        return None
    return CacheSpec(ttl_seconds=entry.cache.ttl_seconds, scope=entry.cache.scope.value)


def _criteria(entry: CriteriaSchema | None) -> Criteria:
    if entry is None:
        return Criteria()
    return Criteria(
        capabilities=frozenset(entry.capabilities),
        adapter_types=frozenset(entry.adapter_types) if entry.adapter_types is not None else None,
        min_context_length=entry.min_context_length,
        max_cost_input=entry.max_cost_input,
        prefer_lowest_cost=entry.prefer_lowest_cost,
    )


def check_fallbacks(entries: list[ConfigurationSchema], known: Ids, problems: Problems) -> None:
    """Every fallback names a configuration other than its own; no cycles."""
    edges: dict[str, list[tuple[str, str]]] = {}  # id -> [(target, path)]
    for index, entry in parsed_entries(entries):
        path = child(item("configurations", index), "fallback")
        targets = edges.setdefault(entry.id, [])
        for position, target in enumerate(entry.fallback):
            target_path = item(path, position)
            if target == entry.id:
                problems.add(target_path, "a configuration cannot fall back to itself")
            elif known.check(target_path, target):
                targets.append((target, target_path))
    _report_cycles(edges, problems)


def _report_cycles(edges: dict[str, list[tuple[str, str]]], problems: Problems) -> None:
    """Depth-first search; each edge back onto the current trail closes a cycle.

    Iterative, and every configuration is explored once, so a long chain or a
    dense fallback graph costs linear time, not a path per combination.
    """
    done: set[str] = set()
    for start in edges:
        if start in done:
            continue
        trail = [start]
        pending = [iter(edges.get(start, []))]
        while pending:
            for target, path in pending[-1]:
                if target in trail:
                    cycle = " -> ".join([*trail[trail.index(target) :], target])
                    problems.add(path, f"fallback cycle: {cycle}")
                elif target not in done:
                    trail.append(target)
                    pending.append(iter(edges.get(target, [])))
                    break
            else:
                pending.pop()
                done.add(trail.pop())
