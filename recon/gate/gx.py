"""Great Expectations itself: its import (started early on a thread by `prefetch_gx`), one
ephemeral context to run suites in (`GxSession`), and its results described as messages."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
import warnings
from dataclasses import replace
from datetime import date, datetime

from .suites import SAMPLE, Suite, columns_of, indexed, raised

log = logging.getLogger(__name__)

_PREFETCH: list[threading.Thread] = []


def prefetch_gx() -> None:
    """Start importing great_expectations on a thread, once per process, for a gate to come.

    Call it where the next seconds leave a core idle: `recon.pipeline.run` calls it just
    before its commit, which DuckDB runs on one core with the GIL released. The import (2-2.5 s
    of one core) then overlaps the commit and the run's summary instead of following them.
    Beside landing or the intermediate models it would slow those by more than it hides
    (bench/README.md). `GxSession` imports great_expectations as usual: if
    this thread is still at it, Python's import lock makes that wait for the same import.
    """
    if _PREFETCH or "great_expectations" in sys.modules:
        return

    def load() -> None:
        try:
            import great_expectations  # noqa: F401
        except Exception as err:  # noqa: BLE001 - GxSession's own import will raise it again
            log.debug("prefetching great_expectations failed: %s", err)

    thread = threading.Thread(target=load, name="recon-gx-prefetch", daemon=True)
    _PREFETCH.append(thread)
    thread.start()


class GxSession:
    """One ephemeral GX context with a pandas data source; reusable across `validate` calls."""

    def __init__(self) -> None:
        t0 = time.perf_counter()
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig
        from great_expectations.expectations.expectation_configuration import (
            ExpectationConfiguration,
        )

        self._gx, self._config = gx, ExpectationConfiguration
        # GX announces its ephemeral docs folder at INFO on every context: not the user's news
        for name in ("great_expectations", "great_expectations.data_context.types.base"):
            logging.getLogger(name).setLevel(logging.WARNING)
        self.context = gx.get_context(mode="ephemeral")
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        source = self.context.data_sources.add_pandas("recon")
        self._batches = source.add_dataframe_asset("batch").add_batch_definition_whole_dataframe("all")
        self._suites: dict[tuple[str, str], object] = {}
        self.startup_seconds = time.perf_counter() - t0

    def suite(self, suite: Suite):
        """The GX ExpectationSuite of `suite`; a bad expectation raises (GX would only log it)."""
        key = (suite.name, json.dumps(suite.expectations, sort_keys=True))
        if key not in self._suites:
            exps = []
            for e in suite.expectations:
                try:
                    exps.append(self._config(type=e["type"], kwargs=e.get("kwargs") or {},
                                             meta=e.get("meta"),
                                             severity=e["meta"]["severity"]).to_domain_obj())
                except Exception as err:  # GX raises several unrelated types here
                    raise ValueError(f"{suite.path.name}: {suite.label(e)}: {err}") from err
            self._suites[key] = self._gx.ExpectationSuite(name=suite.name, expectations=exps)
        return self._suites[key]

    def run(self, suite: Suite, df):
        """GX's results of `suite` on `df`.

        Every expectation runs at GX's BASIC result format first (counts and a sample of the
        unexpected values); only those that fail run again at SUMMARY, whose index list names
        the failing rows by `row_key`. A day that passes (the usual one) skips SUMMARY's
        extra metrics: about a quarter less of the gate's time (bench/README.md).
        """
        batch = self._batches.get_batch(batch_parameters={"dataframe": df})
        with warnings.catch_warnings():
            # GX compares tz-aware columns through Series.values (UTC, correct); pandas 3.1 warns
            warnings.filterwarnings("ignore", message="Series.values returning an ndarray that drops")
            results = indexed(suite, batch.validate(self.suite(suite), result_format={
                "result_format": "BASIC", "partial_unexpected_count": SAMPLE}).results)
            failed = [i for i, r in results
                      if i < len(suite.expectations) and not r.success and not raised(r)]
            if not failed:
                return [r for _, r in results]
            sub = replace(suite, expectations=tuple(suite.expectations[i] for i in failed))
            again = dict(indexed(suite, batch.validate(self.suite(sub), result_format={
                "result_format": "SUMMARY", "partial_unexpected_count": SAMPLE,
                "unexpected_index_column_names": [c for c in suite.row_key if c in df.columns]}).results))
        return [again.get(i, r) for i, r in results]


def _fmt(v) -> str:
    """A value as it reads in a message: NULL, 2026-06-01, 2026-06-01T07:06:01Z, 86401, 0.5."""
    import pandas as pd  # already loaded: the batches are pandas

    if v is None:
        return "NULL"
    try:
        if pd.isna(v):  # NaN, NaT, pd.NA
            return "NULL"
    except (TypeError, ValueError):  # containers
        pass
    if isinstance(v, datetime):  # includes pandas Timestamp
        if v.tzinfo is None and (v.hour, v.minute, v.second, v.microsecond) == (0, 0, 0, 0):
            return v.date().isoformat()  # a DATE column read by pandas
        return v.isoformat().replace("+00:00", "Z")
    if isinstance(v, date):
        return v.isoformat()
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # numpy scalar
        try:
            return _fmt(v.item())
        except (ValueError, AttributeError):
            return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(_fmt(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={_fmt(x)}" for k, x in v.items()) + "}"
    return str(v)


def describe(suite: Suite, cfg, res) -> tuple[bool, str, int | None, str]:
    """(success, observed_value, unexpected_count, message) of one GX expectation result."""
    r = res.result or {}
    kw = cfg.kwargs
    what = f"{suite.name}: {cfg.type}({columns_of(kw) or ''})"
    exc = raised(res)
    if exc:
        msg = exc.get("exception_message") or "raised an exception"
        return False, f"error: {msg}"[:500], None, f"{what} could not be evaluated: {msg}"
    n_bad, n = r.get("unexpected_count"), r.get("element_count")
    if "observed_value" in r:
        observed = _fmt(r["observed_value"])
    else:
        sample = ", ".join(_fmt(x) for x in (r.get("partial_unexpected_list") or [])[:SAMPLE])
        observed = f"{n_bad} of {n} rows unexpected" + (f": {sample}" if sample else "")
    if res.success:
        return True, observed, n_bad, ""
    rows = r.get("partial_unexpected_index_list") or []
    if rows:
        key = [c for c in suite.row_key if c in rows[0]]
        named = "; ".join(
            ", ".join(f"{c}={_fmt(row.get(c))}" for c in key)
            + (" (" + ", ".join(f"{c}={_fmt(v)}" for c, v in row.items() if c not in key) + ")"
               if any(c not in key for c in row) else "")
            for row in rows[:SAMPLE])
        more = f" and {n_bad - len(rows[:SAMPLE])} more" if n_bad and n_bad > SAMPLE else ""
        msg = f"{what}: {n_bad} of {n} rows fail: {named}{more}"
    elif n_bad:
        msg = f"{what}: {n_bad} of {n} rows fail: {observed}"
    else:
        bounds = {k: kw[k] for k in ("value", "min_value", "max_value", "value_set") if k in kw}
        msg = f"{what}: observed {observed}, expected {_fmt(bounds)}"
    return False, observed, n_bad, msg
