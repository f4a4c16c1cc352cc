"""Configuration: thresholds, mapping and the rate card, read from a TOML file.

Every threshold has a documented default (README, "Configuration"). Rates have NO defaults:
prices come from the user's own quote or invoice, or from the bill and inventory themselves.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields
from datetime import date
from decimal import Decimal
from pathlib import Path


@dataclass(frozen=True)
class Thresholds:
    # KEDA's documented default cooldownPeriod; a ScaledObject in the input overrides it.
    keda_cooldown_seconds: int = 300
    # Node drain + provider stop after the cooldown (cluster-autoscaler/Karpenter scale-down).
    scale_down_grace_seconds: int = 60
    # Extra slack before BILLED_AFTER_EXIT fires.
    tail_tolerance_seconds: int = 60
    # Storage billed while no compute runs for longer than this raises STORAGE_LINGERING.
    storage_lingering_age_seconds: int = 3600
    # Runpod's default serverless idle timeout; an endpoint's own idleTimeout overrides it.
    serverless_idle_timeout_seconds: int = 5
    # Per worker session: slack before SERVERLESS_IDLE_EXCESS fires.
    serverless_idle_tolerance_seconds: int = 2
    # Billed compute with no workload raises BILLED_WITHOUT_ACTIVITY above this many seconds.
    billed_without_activity_min_seconds: int = 300
    # A provider "per month" storage price is per this many hours (cloud convention).
    hours_per_month: int = 730
    # RATE_MISMATCH: billed vs expected (seconds × contracted rate) per resource-day, both must be
    # exceeded: an absolute floor (cents of rounding are noise) and a relative share.
    rate_mismatch_tolerance_usd: str = "0.01"
    rate_mismatch_tolerance_ratio: str = "0.005"
    # BILLED_EXCEEDS_RUNTIME: compute billed outside the node's observed life (registration minus
    # the boot allowance, until its deletion) beyond this many seconds per session.
    billed_exceeds_runtime_tolerance_seconds: int = 300
    node_boot_allowance_seconds: int = 300
    # SCALE_TO_ZERO_LATE: replicas alive after KEDA deactivation + cooldownPeriod + this.
    scale_to_zero_tolerance_seconds: int = 60
    # SAVINGS_PLAN_EXPIRING: warn this many days before a plan's fixed expiry.
    savings_plan_expiry_warning_days: int = 14
    # Settlement: a bill bucket pulled less than this long after it ended is `provisional`
    # (Runpod data arrives up to ~1 h late and can be restated; a day of margin).
    settlement_lag_hours: int = 24


@dataclass(frozen=True)
class Mapping:
    node_label: str = "runpod.io/pod-id"
    provider_id_prefix: str = "runpod://"
    use_node_name: bool = True
    team_label: str = "team"


@dataclass(frozen=True)
class Rates:
    """USD. Empty by default on purpose: a missing rate is reported, never assumed."""

    gpu_per_hour: dict[str, Decimal] = field(default_factory=dict)  # per GPU, by gpu type id
    pod_per_hour: dict[str, Decimal] = field(default_factory=dict)  # whole pod, by pod id
    serverless_per_second: dict[str, Decimal] = field(default_factory=dict)  # by endpoint id
    disk_running_per_gb_month: Decimal | None = None
    volume_stopped_per_gb_month: Decimal | None = None
    network_volume_per_gb_month: Decimal | None = None


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
    source: str | None = None


def _dec(v) -> Decimal:
    return Decimal(str(v))


def _section(cls, data: dict, where: str):
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}; known: {sorted(known)}")
    return cls(**data)


def load_config(path: str | Path | None) -> Config:
    """Read a recon TOML file; None gives the defaults (and an empty rate card)."""
    if path is None:
        return Config()
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{p}: not valid TOML: {e}") from None
    th = _section(Thresholds, data.get("thresholds", {}), f"{p} [thresholds]")
    mp = _section(Mapping, data.get("mapping", {}), f"{p} [mapping]")
    r = data.get("rates", {})
    rates = Rates(
        gpu_per_hour={k: _dec(v) for k, v in r.get("gpu_per_hour", {}).items()},
        pod_per_hour={k: _dec(v) for k, v in r.get("pod_per_hour", {}).items()},
        serverless_per_second={k: _dec(v) for k, v in r.get("serverless_per_second", {}).items()},
        disk_running_per_gb_month=_dec(r["disk_running_per_gb_month"])
        if "disk_running_per_gb_month" in r else None,
        volume_stopped_per_gb_month=_dec(r["volume_stopped_per_gb_month"])
        if "volume_stopped_per_gb_month" in r else None,
        network_volume_per_gb_month=_dec(r["network_volume_per_gb_month"])
        if "network_volume_per_gb_month" in r else None,
    )
    card = []
    for i, e in enumerate(r.get("effective", [])):
        try:
            card.append(RateEntry(rate_kind=e["kind"], match_key=str(e["key"]), usd=_dec(e["usd"]),
                                  valid_from=e.get("from"), valid_to=e.get("to")))
        except KeyError as k:
            raise ValueError(f"{p} [[rates.effective]] #{i + 1}: missing {k}") from None
    plans = []
    for i, sp in enumerate(data.get("savings_plans", [])):
        try:
            term = (date.fromisoformat(sp["end"]) - date.fromisoformat(sp["start"])).days
            plans.append(SavingsPlan(plan_id=str(sp["id"]), gpu_type=sp["gpu_type"],
                                     gpu_count=int(sp.get("gpu_count", 1)),
                                     usd_per_gpu_hour=_dec(sp["usd_per_gpu_hour"]),
                                     start=sp["start"], end=sp["end"],
                                     upfront_usd=_dec(sp["upfront_usd"])))
        except (KeyError, ValueError) as k:
            raise ValueError(f"{p} [[savings_plans]] #{i + 1}: {k!r}") from None
        if not 80 <= term <= 190:
            raise ValueError(f"{p} [[savings_plans]] #{i + 1}: a term of {term} days; Runpod plans "
                             "run 3 or 6 months")
    return Config(thresholds=th, mapping=mp, rates=rates, rate_card=tuple(card),
                  savings_plans=tuple(plans), source=str(p))


def is_config_file(path: Path) -> bool:
    """A file in an input folder that is a recon config rather than input data."""
    return path.suffix == ".toml"
