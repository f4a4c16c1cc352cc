"""Model settings: `sql/<layer>/_models.toml`, one table per model, beside the models.

A model's SQL is only its SELECT; how the build treats it (kept between runs and merged, the
bounds index it keeps, how a windowed run replaces its rows, how the scope reads it) is
declared in its layer's `_models.toml`, as dbt declares model configs in YAML beside the models:

    [stg_k8s__pods]
    grain = "one row per distinct Pod version (cluster, pod_uid, resource_version)"
    incremental = { strategy = "merge", key = ["cluster", "pod_uid", "resource_version"], order = "source_file, record_no" }
    bounds = { key = ["cluster", "pod_uid"], span = "created_at" }

The files are read once per process and checked strictly: a model with no `.sql` in its layer,
a key the layer does not accept or a value of the wrong type is an error naming the file, the
model and what is accepted (a misspelt setting silently ignored would change what a run keeps).
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .models import LAYERS, SQL_DIR

FILE = "_models.toml"


@dataclass(frozen=True)
class Spec:
    """`incremental`: how a staging model is kept between runs.

    merge (`key` and `order`): the model's SELECT yields every row and the build keeps one per
    key, the first in `order`; append (no key): every row is kept; recompute (`key` and
    `source`): the rows of the keys the source model's new rows touched are refolded."""
    key: tuple[str, ...] | None  # None: append
    order: str | None
    source: str | None = None    # recompute: the staging model whose changed keys it refolds


@dataclass(frozen=True)
class Bounds:
    """`bounds = { key = [...], span = "<column>" }`: meta.bounds__<model> keeps, per hash of the
    key, the least and greatest value of the span column of its rows, so that a reader after
    every row of some keys scans only the row groups of that span (plus rows whose span column
    is null, which DuckDB also finds by row-group statistics). Rows a merge replaces or a refold
    deletes keep their bounds: a span only ever widens, so it never leaves a row out.

    `within = "<source column>"` (a model refolded from another by the same key): every row's
    span column lies within the span the source's rows of its key have in the source column
    (e.g. `max(pulled_at) as last_seen_at`), so a refold finds the rows to replace by the
    source's span it has already probed, not by a second probe of its own."""
    key: tuple[str, ...]
    col: str
    within: str | None = None


@dataclass(frozen=True)
class Window:
    """`window = { key = [...], where = "<predicate>" }`: a mart without a `day` column that a
    windowed run replaces by key, for the rows the predicate selects."""
    key: tuple[str, ...]
    where: str


@dataclass(frozen=True)
class ModelSettings:
    grain: str | None = None
    incremental: Spec | None = None
    bounds: Bounds | None = None
    window: Window | None = None
    # window = "last_run": a mart that holds what the intermediate model it reads holds, the
    # last run's window: rebuilt whole by every run (its readers check it with `require_built`)
    last_run: bool = False
    # scope = "before": an intermediate model a windowed run builds from all of staging, before
    # sql/scope/ (which reads it)
    scope_before: bool = False
    # scope = "view": a scope model its readers read as a view (evaluated by each), not a copy
    scope_view: bool = False


NONE = ModelSettings()

# the settings each layer's build reads; any other would be ignored, so it is refused
ACCEPTED = {
    "staging": ("grain", "incremental", "bounds"),
    "scope": ("grain", "scope"),
    "intermediate": ("grain", "scope"),
    "marts": ("grain", "window"),
    "checks": ("grain",),
}
SCOPE_VALUES = {"scope": ("view",), "intermediate": ("before",)}
STRATEGIES = {  # strategy: (required keys, optional keys)
    "append": ((), ()),
    "merge": (("key", "order"), ()),
    "recompute": (("key", "from"), ()),
}


class SettingsError(ValueError):
    """A `_models.toml` that does not say what the build can do."""


def _columns(value, where: str) -> tuple[str, ...]:
    if (not isinstance(value, list) or not value
            or not all(isinstance(c, str) and c.strip() for c in value)):
        raise SettingsError(f"{where}: expected a non-empty list of column names, "
                            f"e.g. [\"cluster\", \"pod_uid\"], got {value!r}")
    return tuple(c.strip() for c in value)


def _text(value, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(f"{where}: expected a non-empty string, got {value!r}")
    return value.strip()


def _table(value, where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
    if not isinstance(value, dict):
        raise SettingsError(f"{where}: expected a table {{ {', '.join(required + optional)} }}, "
                            f"got {value!r}")
    unknown = sorted(set(value) - set(required) - set(optional))
    missing = [k for k in required if k not in value]
    if unknown or missing:
        what = [f"unknown key {', '.join(map(repr, unknown))}"] if unknown else []
        what += [f"missing {', '.join(map(repr, missing))}"] if missing else []
        raise SettingsError(f"{where}: {'; '.join(what)} (accepted: "
                            f"{', '.join(required + optional)})")
    return value


def _incremental(value, where: str, models: set[str]) -> Spec:
    if not isinstance(value, dict) or value.get("strategy") not in STRATEGIES:
        got = value.get("strategy") if isinstance(value, dict) else value
        raise SettingsError(f"{where}: strategy must be one of "
                            f"{', '.join(map(repr, STRATEGIES))}, got {got!r}")
    strategy = value["strategy"]
    required, optional = STRATEGIES[strategy]
    t = _table(value, f"{where} (strategy {strategy!r})", ("strategy", *required), optional)
    if strategy == "append":
        return Spec(None, None)
    key = _columns(t["key"], f"{where}.key")
    if strategy == "merge":
        return Spec(key, _text(t["order"], f"{where}.order"))
    source = _text(t["from"], f"{where}.from")
    if source not in models:
        raise SettingsError(f"{where}.from: no model {source!r} in this layer")
    return Spec(key, None, source)


def _bounds(value, where: str) -> Bounds:
    t = _table(value, where, ("key", "span"), ("within",))
    within = t.get("within")
    return Bounds(_columns(t["key"], f"{where}.key"), _text(t["span"], f"{where}.span"),
                  None if within is None else _text(within, f"{where}.within"))


def _window(value, where: str) -> dict:
    if value == "last_run":
        return {"last_run": True}
    if not isinstance(value, dict):
        raise SettingsError(f"{where}: expected \"last_run\" or {{ key, where }}, got {value!r}")
    t = _table(value, where, ("key", "where"))
    return {"window": Window(_columns(t["key"], f"{where}.key"), _text(t["where"], f"{where}.where"))}


def parse(path: Path, layer: str, models: set[str]) -> dict[str, ModelSettings]:
    """{model: its settings} from one layer's `_models.toml`; `models`: the layer's models."""
    try:
        rel = path.relative_to(SQL_DIR.parent)
    except ValueError:
        rel = path
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise SettingsError(f"{rel}: not valid TOML: {e}") from None
    accepted = ACCEPTED.get(layer)
    if accepted is None:
        raise SettingsError(f"{rel}: no layer {layer!r} (layers: {', '.join(ACCEPTED)})")
    out = {}
    for name, table in doc.items():
        where = f"{rel}: [{name}]"
        if name not in models:
            raise SettingsError(f"{where}: no model {name}.sql in sql/{layer}/")
        if not isinstance(table, dict):
            raise SettingsError(f"{where}: expected a table of settings, got {table!r}")
        unknown = sorted(set(table) - set(accepted))
        if unknown:
            raise SettingsError(f"{where}: unknown key {', '.join(map(repr, unknown))} "
                                f"(accepted in sql/{layer}/: {', '.join(accepted)})")
        fields: dict = {}
        if "grain" in table:
            fields["grain"] = _text(table["grain"], f"{where} grain")
        if "incremental" in table:
            fields["incremental"] = _incremental(table["incremental"], f"{where} incremental",
                                                 models)
        if "bounds" in table:
            fields["bounds"] = _bounds(table["bounds"], f"{where} bounds")
        if "window" in table:
            fields.update(_window(table["window"], f"{where} window"))
        if "scope" in table:
            allowed = SCOPE_VALUES[layer]
            if table["scope"] not in allowed:
                raise SettingsError(f"{where} scope: expected {' or '.join(map(repr, allowed))} "
                                    f"in sql/{layer}/, got {table['scope']!r}")
            fields["scope_" + table["scope"]] = True
        out[name] = ModelSettings(**fields)
    return out


@cache
def load(sql_dir: Path = SQL_DIR) -> dict[tuple[str, str], ModelSettings]:
    """{(layer, model): settings} of every layer's `_models.toml` (read once)."""
    out = {}
    for layer in LAYERS:
        path = sql_dir / layer / FILE
        if path.exists():
            models = {p.stem for p in (sql_dir / layer).glob("*.sql")}
            out.update({(layer, n): s for n, s in parse(path, layer, models).items()})
    return out


def settings_of(layer: str, name: str) -> ModelSettings:
    return load().get((layer, name), NONE)


def spec_of(name: str, layer: str = "staging") -> Spec | None:
    """The staging model's `incremental` setting (None: rebuilt in full by every run)."""
    return settings_of(layer, name).incremental


def bounds_of(name: str, layer: str = "staging") -> Bounds | None:
    return settings_of(layer, name).bounds


def build_hash(name: str, sql: str, layer: str = "staging") -> str:
    """What a kept staging table was built by: its SQL and the settings that shape its rows and
    indexes (`incremental`, `bounds`), so that a change of either rebuilds it (not its grain)."""
    s = settings_of(layer, name)
    return hashlib.sha256(f"{sql}\n{s.incremental!r}\n{s.bounds!r}".encode()).hexdigest()
