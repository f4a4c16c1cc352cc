"""The config tables the models read: `config.settings` (thresholds, mapping, the run's window),
`config.rates`, `config.savings_plans`, and the macros over them."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import date

from ..config import Config


def write_config(con, cfg: Config, day_from: date | None, day_to: date | None) -> None:
    con.execute("create or replace table config.settings (name varchar primary key, value varchar)")
    settings = {**asdict(cfg.thresholds), **asdict(cfg.mapping),
                "team_labels": json.dumps(list(cfg.mapping.effective_team_labels)),
                "focus_compute_sku_patterns": json.dumps(list(cfg.mapping.focus_compute_sku_patterns)),
                "cost_centers": json.dumps(cfg.mapping.cost_centers, sort_keys=True),
                "day_from": day_from.isoformat() if day_from else "0001-01-01",
                "day_to": day_to.isoformat() if day_to else "9999-12-31"}
    con.executemany("insert into config.settings values (?, ?)",
                    [(k, str(v)) for k, v in settings.items()])
    con.execute("""create or replace table config.rates (rate_kind varchar, match_key varchar,
                   usd decimal(38, 12), valid_from date, valid_to date)""")
    r = cfg.rates
    rows = [("gpu_per_hour", k, v) for k, v in r.gpu_per_hour.items()]
    rows += [("pod_per_hour", k, v) for k, v in r.pod_per_hour.items()]
    rows += [("serverless_per_second", k, v) for k, v in r.serverless_per_second.items()]
    rows += [("sku_per_unit", k, v) for k, v in r.sku_per_unit.items()]
    for name in ("disk_running_per_gb_month", "volume_stopped_per_gb_month",
                 "network_volume_per_gb_month"):
        if getattr(r, name) is not None:
            rows.append((name, "*", getattr(r, name)))
    rows = [(*r, None, None) for r in rows]
    rows += [(e.rate_kind, e.match_key, e.usd, e.valid_from, e.valid_to) for e in cfg.rate_card]
    if rows:
        # five lists unnested in one statement: executemany took 1 s for 2,500 serverless rates
        # (and pyarrow's import alone 0.2 s on runs that land nothing through it)
        cols = list(zip(*rows))
        text = lambda xs: [None if v is None else str(v) for v in xs]
        con.execute("insert into config.rates select unnest($1), unnest($2), "
                    "unnest($3)::decimal(38, 12), unnest($4)::date, unnest($5)::date",
                    [list(cols[0]), list(cols[1]), text(cols[2]), text(cols[3]), text(cols[4])])
    con.execute("""create or replace table config.savings_plans (plan_id varchar, gpu_type varchar,
                   gpu_count bigint, usd_per_gpu_hour decimal(38, 12), start_day date, end_day date,
                   upfront_usd decimal(38, 12))""")
    if cfg.savings_plans:
        con.executemany("insert into config.savings_plans values (?, ?, ?, ?, ?, ?, ?)",
                        [(sp.plan_id, sp.gpu_type, sp.gpu_count, sp.usd_per_gpu_hour, sp.start,
                          sp.end, sp.upfront_usd) for sp in cfg.savings_plans])
    con.execute("""create or replace macro cfg(n) as
                   (select value from config.settings where name = n)""")
    con.execute("""create or replace macro cfg_int(n) as
                   (select value::bigint from config.settings where name = n)""")
    # the team of a labels object: the first of mapping.team_labels it carries, non-empty
    con.execute("""create or replace macro team_labels() as
                   (select cast(json(value) ->> '$[*]' as varchar[]) from config.settings
                    where name = 'team_labels')""")
    con.execute("""create or replace macro label_of(labels, names) as
                   list_filter(list_transform(names, lambda l: json_extract_string(labels, '$."' || l || '"')),
                               lambda x: x <> '')[1]""")
    # seconds in a finding's message: 86400.000 -> 86400, 688.580 -> 688.58
    con.execute(r"""create or replace macro secs_text(x) as
                   regexp_replace(regexp_replace(x::varchar, '(\.[0-9]*[1-9])0+$', '\1'),
                                  '\.0+$', '')""")
    # the part of `amount` (DECIMAL, 12 places) that the stretch [a, b) of a period `whole` long
    # holds, in exact integer arithmetic: DuckDB divides decimals as DOUBLE. Each piece is the
    # difference of two floors of the running share, so the pieces of a period add up to `amount`
    # exactly (sql/intermediate/int_focus__charge_days.sql splits FOCUS charges by day with it).
    con.execute("""create or replace macro time_share(amount, a, b, whole) as
                   cast(cast((cast(amount * 1000000000000 as hugeint) * b) // whole
                             - (cast(amount * 1000000000000 as hugeint) * a) // whole as decimal(38, 0))
                        * 0.000000000001 as decimal(38, 12))""")
