"""Data-quality gate, large tables: each expectation of a table suite translated to DuckDB SQL.

A translation (`_Translator.check`) gives a `_Check`: the rows GX counts for the expectation (its
domain: the row condition, as pandas' `DataFrame.query` evaluates it) and which of them GX finds
unexpected, for the types with an exact SQL form (not null, unique, compound unique, in set,
between, pair a > b, pair in set, table row count), with pandas' semantics: NaN is missing,
decimals compare as float64 (as DuckDB hands them to pandas), a NULL in a pair comparison is
unexpected unless `ignore_row_if` drops it. Anything else raises `_Untranslatable`, and the
expectation runs on a read of its columns. `recon.gate.pushdown` counts, samples and batches the
checks.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .suites import JSON_CHARS, condition_text, quoted

NOT_NULL, IN_SET, BETWEEN = ("expect_column_values_to_not_be_null", "expect_column_values_to_be_in_set",
                             "expect_column_values_to_be_between")
UNIQUE, COMPOUND_UNIQUE = "expect_column_values_to_be_unique", "expect_compound_columns_to_be_unique"
PAIR_GT, PAIR_IN_SET = ("expect_column_pair_values_a_to_be_greater_than_b",
                        "expect_column_pair_values_to_be_in_set")
ROW_COUNT_EQUAL, ROW_COUNT_BETWEEN = "expect_table_row_count_to_equal", "expect_table_row_count_to_be_between"
_PUSHED_KWARGS = {  # the kwargs each translated type may carry; anything else runs the ordinary way
    NOT_NULL: {"column", "row_condition"},
    IN_SET: {"column", "value_set", "row_condition"},
    BETWEEN: {"column", "min_value", "max_value", "strict_min", "strict_max", "row_condition"},
    UNIQUE: {"column", "row_condition"},
    COMPOUND_UNIQUE: {"column_list", "ignore_row_if", "row_condition"},
    PAIR_GT: {"column_A", "column_B", "or_equal", "ignore_row_if", "row_condition"},
    PAIR_IN_SET: {"column_A", "column_B", "value_pairs_set", "ignore_row_if"},
    ROW_COUNT_EQUAL: {"value"},
    ROW_COUNT_BETWEEN: {"min_value", "max_value"},
}
_INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}
_AS_FLOAT64 = {"HUGEINT", "UHUGEINT"}  # and DECIMAL(p, s): pandas gets float64
_TIMES = {"DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE"}


class _Untranslatable(Exception):
    """This expectation has no exact SQL form here: it runs on a read of its columns."""


@dataclass
class _Check:
    """One expectation in SQL: the rows GX counts (`domain`) and which of them it finds unexpected.

    kind `row`: `bad` is a per-row predicate; `unique`: rows of the domain not `ignore`d whose
    `keys` repeat; `table`: the table's row count.
    """
    index: int
    kind: str
    domain: str = "true"
    bad: str = "false"
    fast_count: str | None = None
    keys: tuple[str, ...] = ()
    ignore: str = "false"
    element_count: int = 0
    unexpected_count: int = 0
    sample: tuple[int, ...] = ()
    repeated: list[int] = field(default_factory=list)  # `unique`: key hashes seen more than once

    @property
    def live(self) -> str:
        """`unique`: the rows whose keys are compared."""
        return f"(({self.domain}) and not ({self.ignore}))"

    @property
    def repeats(self) -> str:
        """`unique`: the row's key hash is one of `repeated` (the query's parameter). Rows sharing
        a key share its hash, so only these rows can be duplicates: the exact (and costlier)
        grouping by the key values runs on them alone."""
        return f"hash({', '.join(self.keys)}) in (select unnest(?::ubigint[]))"

    @property
    def flagged(self) -> str:
        """SQL: is the row unexpected, within the rows it is evaluated on (a batch or the table)."""
        if self.kind == "row":
            return f"(({self.domain}) and ({self.bad}))"
        return (f"case when {self.live} then count(*) over (partition by {self.live}, {', '.join(self.keys)}) > 1 "
                "else false end")


class _Translator:
    """Translate a table suite's expectations to SQL on that table, with pandas' semantics."""

    types: dict[str, str]  # column -> DuckDB type of the table (set by `pushdown._Pushdown`)

    # -- values as pandas holds them
    def _col(self, name) -> str:
        if not isinstance(name, str) or name not in self.types:
            raise _Untranslatable(f"column {name!r}")
        return name

    def family(self, name: str) -> str:
        t = self.types[self._col(name)]
        if t in _INTEGERS or t in _AS_FLOAT64 or t == "DOUBLE" or t.startswith("DECIMAL"):
            return "num"  # FLOAT (float32 in pandas, compared in float32) is left out on purpose
        return {"VARCHAR": "str", "JSON": "json", "BOOLEAN": "bool"}.get(t, "time" if t in _TIMES else "other")

    def value(self, name: str) -> str:
        """The column as the pandas batch holds it: decimals as float64, NaN as missing, JSON cut."""
        t, c = self.types[self._col(name)], quoted(name)
        if t.startswith("DECIMAL"):
            # DuckDB hands pandas double(unscaled integer) / 10^scale, which is not always
            # cast(x as double) (that rounds once, correctly): 9999999.999999999 becomes 1e7
            m = re.fullmatch(r"DECIMAL\(\d+,\s*(\d+)\)", t)
            if not m or int(m.group(1)) > 18:  # the fraction times 10^scale would not fit
                raise _Untranslatable(f"{t} column {name}")
            p = 10 ** int(m.group(1))
            return (f"(cast(cast(trunc({c}) as hugeint) * {p}::hugeint + cast(({c} - trunc({c})) * {p}::hugeint "
                    f"as hugeint) as double) / {float(p)!r})")
        if t in _AS_FLOAT64:
            return f"cast({c} as double)"
        if t == "DOUBLE":
            return f"(case when isnan({c}) then null else {c} end)"
        if t == "JSON":
            return f"left(cast({c} as varchar), {JSON_CHARS})"
        return c

    def missing(self, name: str) -> str:
        t, c = self.types[self._col(name)], quoted(name)
        return f"({c} is null or isnan({c}))" if t == "DOUBLE" else f"({c} is null)"

    @staticmethod
    def literal(v, family: str) -> str:
        if family == "str" and isinstance(v, str):
            return "'" + v.replace("'", "''") + "'"
        if family == "num" and isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2 ** 53:
            return str(v)
        if family == "num" and isinstance(v, float) and math.isfinite(v):
            return f"{v!r}::double"
        raise _Untranslatable(f"value {v!r} for a {family} column")

    def condition(self, cond) -> str:
        """A serialized GX row condition as pandas' `DataFrame.query` evaluates it."""
        if cond is None:
            return "true"
        if not isinstance(cond, dict):
            raise _Untranslatable("a string row_condition")
        kind = cond.get("type")
        if kind in ("and", "or") and cond.get("conditions"):
            return "(" + f" {kind} ".join(self.condition(c) for c in cond["conditions"]) + ")"
        col = (cond.get("column") or {}).get("name")
        if kind == "nullity":
            return self.missing(col) if cond.get("is_null") else f"(not {self.missing(col)})"
        if kind == "comparison" and cond.get("operator") in ("==", "!="):
            fam = self.family(col)
            lit = self.literal(cond.get("parameter"), fam if fam in ("str", "num") else "-")
            if cond["operator"] == "==":  # NaN == x is False, NaN != x is True
                return f"coalesce({self.value(col)} = {lit}, false)"
            return f"coalesce({self.value(col)} <> {lit}, true)"
        raise _Untranslatable(f"row_condition {condition_text(cond)}")

    # -- expectations
    def check(self, index: int, exp: dict) -> _Check:
        kind, kw = exp["type"], dict(exp.get("kwargs") or {})
        if kind not in _PUSHED_KWARGS or set(kw) - _PUSHED_KWARGS[kind]:
            raise _Untranslatable(kind)
        if kind in (ROW_COUNT_EQUAL, ROW_COUNT_BETWEEN):
            return _Check(index, "table")
        domain = self.condition(kw.get("row_condition"))
        if kind == NOT_NULL:
            col = self._col(kw.get("column"))
            fast = (f"count(*) - count({quoted(col)})"
                    if domain == "true" and self.types[col] != "DOUBLE" else None)
            return _Check(index, "row", domain, self.missing(col), fast)
        if kind == IN_SET:
            col, values = kw.get("column"), kw.get("value_set")
            fam = self.family(col)
            if not isinstance(values, list) or fam not in ("str", "num"):
                raise _Untranslatable(f"{kind} on a {fam} column")
            inside = (f"coalesce({self.value(col)} in ({', '.join(self.literal(v, fam) for v in values)}), false)"
                      if values else "false")
            return _Check(index, "row", domain, f"(not {self.missing(col)} and not {inside})")
        if kind == BETWEEN:
            col, lo, hi = kw.get("column"), kw.get("min_value"), kw.get("max_value")
            if self.family(col) != "num" or (lo is None and hi is None) or (
                    lo is not None and hi is not None and not lo <= hi):
                raise _Untranslatable(kind)
            v, tests = self.value(col), []
            if lo is not None:
                tests.append(f"{v} {'>' if kw.get('strict_min') else '>='} {self.literal(lo, 'num')}")
            if hi is not None:
                tests.append(f"{v} {'<' if kw.get('strict_max') else '<='} {self.literal(hi, 'num')}")
            return _Check(index, "row", domain, f"(not {self.missing(col)} and not ({' and '.join(tests)}))")
        if kind in (UNIQUE, COMPOUND_UNIQUE):
            cols = [kw.get("column")] if kind == UNIQUE else kw.get("column_list")
            if not isinstance(cols, list) or not cols or any(
                    self.family(c) not in ("str", "num", "time", "json", "bool") for c in cols):
                raise _Untranslatable(kind)
            how = "unique" if kind == UNIQUE else kw.get("ignore_row_if", "all_values_are_missing")
            ignore = {"unique": self.missing(cols[0]),
                      "all_values_are_missing": " and ".join(self.missing(c) for c in cols),
                      "any_value_is_missing": " or ".join(self.missing(c) for c in cols),
                      "never": "false"}.get(how)
            if ignore is None:
                raise _Untranslatable(f"ignore_row_if {how!r}")
            return _Check(index, "unique", domain, keys=tuple(self.value(c) for c in cols), ignore=ignore)
        # the column pairs
        a, b = kw.get("column_A"), kw.get("column_B")
        how = kw.get("ignore_row_if", "both_values_are_missing")
        ignore = {"both_values_are_missing": f"({self.missing(a)} and {self.missing(b)})",
                  "either_value_is_missing": f"({self.missing(a)} or {self.missing(b)})",
                  "neither": "false"}.get(how)
        if ignore is None:
            raise _Untranslatable(f"ignore_row_if {how!r}")
        if kind == PAIR_GT:
            fa, fb = self.family(a), self.family(b)
            if not (fa == fb == "num" or (fa == fb == "time" and self.types[a] == self.types[b])):
                raise _Untranslatable(f"{kind} on {self.types[a]}, {self.types[b]}")
            op = ">=" if kw.get("or_equal") else ">"
            holds = f"coalesce({self.value(a)} {op} {self.value(b)}, false)"  # NULL/NaN/NaT: False
        else:
            pairs = kw.get("value_pairs_set")
            if (self.family(a), self.family(b)) != ("str", "str") or not isinstance(pairs, list) or any(
                    not isinstance(p, (list, tuple)) or len(p) != 2 for p in pairs):
                raise _Untranslatable(kind)

            def same(col, v):
                return f"{quoted(col)} is null" if v is None else f"{quoted(col)} is not distinct from {self.literal(v, 'str')}"
            holds = "(" + (" or ".join(f"({same(a, x)} and {same(b, y)})" for x, y in pairs) or "false") + ")"
        return _Check(index, "row", domain, f"(not {ignore} and not {holds})")
