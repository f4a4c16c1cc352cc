"""Configuration: thresholds, mapping and the rate card, read from a TOML file.

Every threshold has a documented default (README, "Configuration"). Rates have NO defaults:
prices come from the user's own quote or invoice, or from the bill and inventory themselves.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Annotated, NotRequired

from annotated_types import Ge
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

# What a setting must be. pydantic checks each one when a file is read and reports every
# problem at once; it is imported then (load_config), not with this module (+0.1 s).
NonNegativeInt = Annotated[int, Ge(0)]
NonNegDecimal = Annotated[Decimal, Ge(0)]
_STRICT = {"extra": "forbid"}  # pydantic's ConfigDict: an unknown key is an error


@dataclass(frozen=True)
class Thresholds:
    __pydantic_config__ = _STRICT
    # KEDA's documented default cooldownPeriod (1 → 0 only): a ScaledObject in the input sets its
    # own; allowed after the last task of a pod that no ScaledObject or ScaledJob owns.
    keda_cooldown_seconds: NonNegativeInt = 300
    # A node's scale-down after its last pod ends (drain + cluster autoscaler/Karpenter or the
    # provider stopping it): all a ScaledJob's node, or a replica's after KEDA or the HPA, may add.
    scale_down_grace_seconds: NonNegativeInt = 60
    # Extra slack before BILLED_AFTER_EXIT fires.
    tail_tolerance_seconds: NonNegativeInt = 60
    # Storage billed while no compute runs for longer than this raises STORAGE_LINGERING.
    storage_lingering_age_seconds: NonNegativeInt = 3600
    # Runpod's default serverless idle timeout; an endpoint's own idleTimeout overrides it.
    serverless_idle_timeout_seconds: NonNegativeInt = 5
    # Per worker session: slack before SERVERLESS_IDLE_EXCESS fires.
    serverless_idle_tolerance_seconds: NonNegativeInt = 2
    # Runpod's documented default execution timeout (endpoint settings, "Execution timeout:
    # 600s (10 min)"); an endpoint's own `timeout` (v2, ms) or `executionTimeoutMs` (v1) wins.
    serverless_execution_timeout_seconds: NonNegativeInt = 600
    # SERVERLESS_STUCK_WORKER: a worker seen alive this long past its last job + idle timeout
    # (it did not scale down), or a job executing this long past the execution timeout. Ten
    # minutes: a workers snapshot every few minutes and a restart's model load stay under it.
    serverless_stuck_worker_tolerance_seconds: NonNegativeInt = 600
    # SERVERLESS_ALWAYS_ON: an endpoint billed this many whole hours in a UTC day with no job
    # queued, running or in its idle timeout. Two: one such hour can be a single late scale-down.
    serverless_always_on_hours: NonNegativeInt = 2
    # Billed compute with no workload raises BILLED_WITHOUT_ACTIVITY above this many seconds.
    billed_without_activity_min_seconds: NonNegativeInt = 300
    # A provider "per month" storage price is per this many hours (cloud convention).
    hours_per_month: Annotated[int, Ge(1)] = 730  # a divisor
    # RATE_MISMATCH: billed vs expected (seconds × contracted rate) per resource-day, both must be
    # exceeded: an absolute floor (cents of rounding are noise) and a relative share.
    rate_mismatch_tolerance_usd: NonNegDecimal = Decimal("0.01")
    # INVOICE_MISMATCH: an invoice's amount vs the reconciled bill of its period and scope, beyond
    # what usage landed or restated after its issue explains: cents of rounding are noise.
    invoice_mismatch_tolerance_usd: NonNegDecimal = Decimal("0.01")
    rate_mismatch_tolerance_ratio: NonNegDecimal = Decimal("0.005")
    # BILLED_EXCEEDS_RUNTIME: compute billed outside the node's observed life (registration minus
    # the boot allowance, until its deletion) beyond this many seconds per session.
    billed_exceeds_runtime_tolerance_seconds: NonNegativeInt = 300
    node_boot_allowance_seconds: NonNegativeInt = 300
    # SCALE_TO_ZERO_LATE: KEDA scaled to zero later than last active + cooldownPeriod +
    # pollingInterval + this.
    scale_to_zero_tolerance_seconds: NonNegativeInt = 60
    # HPA_SCALE_DOWN_SLOW: the HPA held replicas above its minReplicas later than the demand fall
    # KEDA saw (its Active condition's turn to False) + scaleDown stabilizationWindowSeconds +
    # this (the HPA syncs every 15 s; the rest is slack).
    hpa_scale_down_tolerance_seconds: NonNegativeInt = 60
    # SAVINGS_PLAN_EXPIRING: warn this many days before a plan's fixed expiry.
    savings_plan_expiry_warning_days: NonNegativeInt = 14
    # SAVINGS_PLAN_UNUSED: raised when more than this much of a day of the plan's GPUs ran no
    # pod (an hour: a restart or a short gap between pods is not a finding).
    savings_plan_unused_tolerance_seconds: NonNegativeInt = 3600
    # Settlement: a bill bucket pulled less than this long after it ended is `provisional`
    # (Runpod data arrives up to ~1 h late and can be restated; a day of margin).
    settlement_lag_hours: NonNegativeInt = 24
    # A day's bill has landed once a line of it was pulled this long after the day ended
    # (Runpod: "Invoices may take up to 60 minutes to reflect new spending data"); before, the
    # day is `awaiting_bill` and not published (sql/intermediate/int_billing__bill_days.sql).
    bill_arrival_minutes: NonNegativeInt = 60


@dataclass(frozen=True)
class Mapping:
    __pydantic_config__ = _STRICT
    node_label: str = "runpod.io/pod-id"
    provider_id_prefix: str = "runpod://"
    use_node_name: bool = True
    # The labels that name a pod's (or a node's) team, in order: the first one the object carries
    # with a non-empty value wins, e.g. ["team", "app.kubernetes.io/part-of"]. Empty: the single
    # `team_label`, which is what a file written for one label keeps meaning.
    team_label: str = "team"
    team_labels: tuple[str, ...] = ()
    # FOCUS rows reconciled as instance compute besides ServiceCategory `Compute`: regular
    # expressions (RE2) over SkuId or ChargeDescription, e.g. ["^ml\\.g5\\."] for SageMaker's
    # GPU instances (ServiceCategory "AI and Machine Learning"). The row must still be usage of a
    # resource consumed in a duration (sql/staging/stg_focus__charges.sql).
    focus_compute_sku_patterns: tuple[str, ...] = ()
    # team → cost center for the finance CSVs (costs_<day>.csv `cost_center`), e.g.
    # {nlp = "CC-4100", search = "CC-4200"}: Runpod invoices per cost center, and a team label
    # is what the cluster knows (Runpod's own cost centers attach resources, not teams, through
    # its cost-centers API, which the project does not read). A team not listed (and __idle__ / __unallocated__ unless listed)
    # has an empty cost center: none is guessed.
    cost_centers: dict[str, str] = field(default_factory=dict)

    @property
    def effective_team_labels(self) -> tuple[str, ...]:
        return self.team_labels or (self.team_label,)


@dataclass(frozen=True)
class Rates:
    """USD. Empty by default on purpose: a missing rate is reported, never assumed."""

    __pydantic_config__ = _STRICT
    gpu_per_hour: dict[str, NonNegDecimal] = field(default_factory=dict)  # per GPU, by type id
    pod_per_hour: dict[str, NonNegDecimal] = field(default_factory=dict)  # whole pod, by pod id
    serverless_per_second: dict[str, NonNegDecimal] = field(default_factory=dict)  # by endpoint
    # per PricingUnit of a FOCUS SkuId: prices a usage-only FOCUS row, one whose file bills no
    # cost (sql/intermediate/int_focus__charge_days.sql), e.g. {"gd-8xh100ib-i128" = 40.00}
    sku_per_unit: dict[str, NonNegDecimal] = field(default_factory=dict)
    disk_running_per_gb_month: NonNegDecimal | None = None
    volume_stopped_per_gb_month: NonNegDecimal | None = None
    network_volume_per_gb_month: NonNegDecimal | None = None


@dataclass(frozen=True)
class Landing:
    """What landing accepts of a record; a record beyond it is quarantined with the reason."""

    __pydantic_config__ = _STRICT
    # Bytes of one record (a JSON Lines line, a List item, one record of a response). Kubernetes
    # objects stay under etcd's 1.5 MiB and Runpod records are small; a record of ~48 MB made
    # the 1.25 GB memory limit run out in int_k8s__workloads, which aborted the whole run.
    max_record_bytes: Annotated[int, Ge(1024)] = 8 << 20
    # Dates a timestamp field may hold, [from, before) by the date written (its UTC offset
    # aside). Go's zero time 0001-01-01, a negative year or 9999 made one pod's workload span
    # millions of days (generate_series over its days: minutes and gigabytes for one record).
    timestamps_from: date = date(2000, 1, 1)
    timestamps_before: date = date(2100, 1, 1)


@dataclass(frozen=True)
class RateEntry:
    """An effective-dated rate-card entry: [valid_from, valid_to) in UTC days; None = open."""

    rate_kind: str
    match_key: str
    usd: Decimal
    valid_from: str | None = None
    valid_to: str | None = None


@dataclass(frozen=True)
class SavingsPlan:
    """A committed Runpod savings plan (3 or 6 months, upfront, fixed expiry, one GPU type)."""

    plan_id: str
    gpu_type: str
    gpu_count: int
    usd_per_gpu_hour: Decimal
    start: str
    end: str
    upfront_usd: Decimal


@dataclass(frozen=True)
class Config:
    thresholds: Thresholds = field(default_factory=Thresholds)
    mapping: Mapping = field(default_factory=Mapping)
    rates: Rates = field(default_factory=Rates)
    rate_card: tuple[RateEntry, ...] = ()
    savings_plans: tuple[SavingsPlan, ...] = ()
    landing: Landing = field(default_factory=Landing)
    # shard name -> the Kubernetes clusters it owns (`[shards]`; recon/shards.py)
    shards: dict[str, tuple[str, ...]] = field(default_factory=dict)
    source: str | None = None


# the TOML shapes of a dated rate and a savings plan ("from" is no Python name: functional form)
_Effective = TypedDict("_Effective", {"kind": str, "key": str | int, "usd": NonNegDecimal,
                                      "from": NotRequired[date], "to": NotRequired[date]})
_Effective.__pydantic_config__ = _STRICT


class _Plan(TypedDict):
    __pydantic_config__ = _STRICT
    id: str | int
    gpu_type: str
    gpu_count: NotRequired[Annotated[int, Ge(1)]]
    usd_per_gpu_hour: NonNegDecimal
    start: date
    end: date
    upfront_usd: NonNegDecimal


def _check(kind, data, where: str, problems: list[str]):
    """`data` validated as `kind`, or None with each problem appended as `where key: what`."""
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(kind).validate_python(data)
    except ValidationError as e:
        for err in e.errors(include_url=False):
            key = ".".join(str(x) for x in err["loc"])
            if err["type"] in ("unexpected_keyword_argument", "extra_forbidden"):
                near = difflib.get_close_matches(str(err["loc"][-1]), _keys(kind), n=1)
                msg = "unknown key" + (f", did you mean {near[0]}?" if near else "")
            elif err["type"] == "missing":
                msg = "missing"
            else:
                msg = err["msg"].replace("Input should", "should")
            got = "" if err["type"] == "missing" else f" (got {err['input']!r})"
            problems.append(f"{where} {key}: {msg}{got}")
        return None


def _keys(kind) -> list[str]:
    return list(getattr(kind, "__dataclass_fields__", None) or kind.__annotations__)


def load_config(path: str | Path | None) -> Config:
    """Read a recon TOML file; None gives the defaults (and an empty rate card).

    Every problem of the file is reported at once, in one ValueError naming the file, the
    section and the key: an unknown key (a typo would otherwise be a default in silence), a
    value of the wrong type, a negative threshold or rate, or a rate that is no number. None of
    them ends the run in a traceback, and every unknown key is named, not only the first.
    """
    if path is None:
        return Config()
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{p}: not valid TOML: {e}") from None
    problems: list[str] = []
    unknown = sorted(set(data) - {"thresholds", "mapping", "rates", "savings_plans", "landing",
                                  "shards"})
    problems += [f"{p} [{k}]: unknown section" for k in unknown]
    th = _check(Thresholds, data.get("thresholds", {}), f"{p} [thresholds]", problems)
    mp = _check(Mapping, data.get("mapping", {}), f"{p} [mapping]", problems)
    if mp is not None:
        problems += [f"{p} [mapping]: focus_compute_sku_patterns: {why}"
                     for why in _bad_patterns(mp.focus_compute_sku_patterns)]
    landing = _check(Landing, data.get("landing", {}), f"{p} [landing]", problems)
    if landing is not None and landing.timestamps_from >= landing.timestamps_before:
        problems.append(f"{p} [landing]: timestamps_from ({landing.timestamps_from}) must come "
                        f"before timestamps_before ({landing.timestamps_before})")
    r = dict(data.get("rates", {}))
    effective = r.pop("effective", [])
    rates = _check(Rates, r, f"{p} [rates]", problems)
    card = []
    for i, e in enumerate(effective if isinstance(effective, list) else [effective]):
        e = _check(_Effective, e, f"{p} [[rates.effective]] #{i + 1}", problems)
        if e is not None:
            card.append(RateEntry(rate_kind=e["kind"], match_key=str(e["key"]), usd=e["usd"],
                                  valid_from=_iso(e.get("from")), valid_to=_iso(e.get("to"))))
    plans = []
    raw_plans = data.get("savings_plans", [])
    for i, sp in enumerate(raw_plans if isinstance(raw_plans, list) else [raw_plans]):
        where = f"{p} [[savings_plans]] #{i + 1}"
        sp = _check(_Plan, sp, where, problems)
        if sp is None:
            continue
        term = (sp["end"] - sp["start"]).days
        if not 80 <= term <= 190:
            problems.append(f"{where}: a term of {term} days; Runpod plans run 3 or 6 months")
            continue
        plans.append(SavingsPlan(plan_id=str(sp["id"]), gpu_type=sp["gpu_type"],
                                 gpu_count=sp.get("gpu_count", 1),
                                 usd_per_gpu_hour=sp["usd_per_gpu_hour"],
                                 start=sp["start"].isoformat(), end=sp["end"].isoformat(),
                                 upfront_usd=sp["upfront_usd"]))
    shards = _shards(data.get("shards", {}), f"{p} [shards]", problems)
    if problems:
        raise ValueError(f"{len(problems)} problem(s) in {p}:\n  " + "\n  ".join(problems))
    return Config(thresholds=th, mapping=mp, rates=rates, rate_card=tuple(card),
                  savings_plans=tuple(plans), landing=landing, shards=shards, source=str(p))


def _shards(data, where: str, problems: list[str]) -> dict[str, tuple[str, ...]]:
    """`[shards]`: name = ["cluster", ...]. A cluster in two shards would have its rows
    reconciled twice, and `__unassigned__` is the shard of everything no named shard owns."""
    from .shards import NAME, UNASSIGNED

    out: dict[str, tuple[str, ...]] = {}
    if not isinstance(data, dict):
        problems.append(f"{where}: should be a table of name = [\"cluster\", ...]")
        return out
    owner: dict[str, str] = {}
    for name, clusters in data.items():
        if name == UNASSIGNED:
            problems.append(f"{where} {name}: reserved: the shard of the clusters no shard "
                            "names, and of the bill lines no shard's nodes claim")
            continue
        if not NAME.fullmatch(name):
            problems.append(f"{where} {name}: a shard name is letters, digits, '-' and '_' "
                            "(it names a warehouse file and a shard= folder)")
            continue
        if (not isinstance(clusters, list) or not clusters
                or not all(isinstance(c, str) and c for c in clusters)):
            problems.append(f"{where} {name}: should be a non-empty list of cluster names "
                            f"(got {clusters!r})")
            continue
        for c in clusters:
            if c in owner:
                problems.append(f"{where} {name}: cluster {c!r} is already in shard "
                                f"{owner[c]!r}; a cluster belongs to one shard")
            owner[c] = name
        out[name] = tuple(clusters)
    return out


def _bad_patterns(patterns) -> list[str]:
    """The patterns DuckDB's regular expressions (RE2, what stg_focus__charges runs) refuse."""
    if not patterns:
        return []
    import duckdb

    con = duckdb.connect()
    bad = []
    for pat in patterns:
        try:
            con.execute("select regexp_matches('', ?)", [pat])
        except duckdb.Error as e:
            bad.append(f"{pat!r} is not a regular expression ({str(e).splitlines()[0]})")
    con.close()
    return bad


def _iso(d: date | None) -> str | None:
    return None if d is None else d.isoformat()


def is_config_file(path: Path) -> bool:
    """A file in an input folder that is a recon config rather than input data."""
    return path.suffix == ".toml"
