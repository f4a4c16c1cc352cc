"""recon.toml: every problem of the file named at once, with its section and key; values typed.

A threshold of the wrong type or a rate that is no number must not end `recon run` in a
traceback (a DuckDB TransactionException, a decimal.InvalidOperation), a negative threshold is
refused, and every section with unknown keys is named (its `[thresholds]` printed as is, not
eaten by rich's markup on the way to the terminal).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from recon.cli import app
from recon.config import Thresholds, load_config

GOOD = """
[thresholds]
keda_cooldown_seconds = "120"          # a number as text is read as the number
rate_mismatch_tolerance_usd = 0.02     # a TOML float becomes an exact decimal
[mapping]
team_label = "cost-centre"
use_node_name = false
[rates]
disk_running_per_gb_month = 0.1
[rates.gpu_per_hour]
"NVIDIA L40S" = "0.86"
"NVIDIA H100" = 2.39
[[rates.effective]]
kind = "gpu_per_hour"
key = "NVIDIA L40S"
usd = "0.79"
from = 2026-06-01
[[savings_plans]]
id = 7
gpu_type = "NVIDIA H100"
usd_per_gpu_hour = "2.00"
start = "2026-03-10"
end = 2026-06-10
upfront_usd = 920
"""

BAD = """
[thresholds]
keda_cooldown_seconds = "five minutes"
storage_lingering_age_seconds = -5
hours_per_month = 0
tail_tolerence_seconds = 60
[mapping]
team_labl = "team"
[rates.gpu_per_hour]
"NVIDIA L40S" = "abc"
"NVIDIA H100" = -1
[[rates.effective]]
kind = "gpu_per_hour"
usd = "x"
from = "2026-02-30"
[[savings_plans]]
id = "short"
gpu_type = "H100"
usd_per_gpu_hour = 2
start = 2026-01-01
end = 2026-02-01
upfront_usd = 100
[ratez]
a = 1
"""


def test_a_good_file_is_read_with_its_types(tmp_path):
    p = tmp_path / "recon.toml"
    p.write_text(GOOD)
    cfg = load_config(p)
    assert cfg.thresholds.keda_cooldown_seconds == 120
    assert cfg.thresholds.rate_mismatch_tolerance_usd == Decimal("0.02")
    assert cfg.thresholds.tail_tolerance_seconds == Thresholds().tail_tolerance_seconds
    assert cfg.mapping.team_label == "cost-centre" and cfg.mapping.use_node_name is False
    # a file naming one team label keeps meaning that one label
    assert cfg.mapping.effective_team_labels == ("cost-centre",)
    assert cfg.rates.gpu_per_hour == {"NVIDIA L40S": Decimal("0.86"), "NVIDIA H100": Decimal("2.39")}
    assert cfg.rates.disk_running_per_gb_month == Decimal("0.1")
    (e,) = cfg.rate_card
    assert (e.match_key, e.usd, e.valid_from, e.valid_to) == ("NVIDIA L40S", Decimal("0.79"),
                                                              "2026-06-01", None)
    (sp,) = cfg.savings_plans
    assert (sp.plan_id, sp.gpu_count, sp.start, sp.end, sp.upfront_usd) == (
        "7", 1, "2026-03-10", "2026-06-10", Decimal(920))
    assert date.fromisoformat(sp.end) > date.fromisoformat(sp.start)


def test_every_problem_is_named_at_once(tmp_path):
    p = tmp_path / "recon.toml"
    p.write_text(BAD)
    with pytest.raises(ValueError) as e:
        load_config(p)
    lines = str(e.value).splitlines()
    assert lines[0] == f"12 problem(s) in {p}:"
    said = "\n".join(lines[1:])
    for want in (
        "[ratez]: unknown section",
        "[thresholds] keda_cooldown_seconds: should be a valid integer",
        "(got 'five minutes')",
        "[thresholds] storage_lingering_age_seconds: should be greater than or equal to 0 (got -5)",
        "[thresholds] tail_tolerence_seconds: unknown key, did you mean tail_tolerance_seconds?",
        "[thresholds] hours_per_month: should be greater than or equal to 1 (got 0)",
        "[mapping] team_labl: unknown key, did you mean team_label?",
        "[rates] gpu_per_hour.NVIDIA L40S: should be a valid decimal (got 'abc')",
        "[rates] gpu_per_hour.NVIDIA H100: should be greater than or equal to 0 (got -1)",
        "[[rates.effective]] #1 key: missing",
        "[[rates.effective]] #1 usd: should be a valid decimal (got 'x')",
        "[[rates.effective]] #1 from: should be a valid date",
        "[[savings_plans]] #1: a term of 31 days; Runpod plans run 3 or 6 months",
    ):
        assert want in said, (want, said)
    assert all(line.startswith(f"  {p} [") for line in lines[1:])


def test_recon_run_prints_them_whole_and_exits_2(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "recon.toml").write_text(BAD)
    r = CliRunner().invoke(app, ["run", "--input", str(d), "--db", str(tmp_path / "db.duckdb")],
                           terminal_width=400)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    # the brackets survive the terminal's markup
    assert "[thresholds] tail_tolerence_seconds: unknown key" in r.output
    assert "[[rates.effective]] #1 usd" in r.output
    assert not (tmp_path / "db.duckdb").exists()


def test_query_shows_data_that_looks_like_markup_as_is(sim_run):
    """A value with brackets (Kubernetes event messages have them) is shown as is: read as
    markup it would end `recon query` in a rich MarkupError ('[/x]') or lose its brackets
    ('[bold]')."""
    r = CliRunner().invoke(app, ["query", "--db", str(sim_run["db"]),
                                 "select '[/x] and [bold]b' as a, '[thresholds]' as b"],
                           terminal_width=200)
    assert r.exit_code == 0, r.output
    assert "[/x] and [bold]b" in r.output and "[thresholds]" in r.output


def test_team_labels_are_an_ordered_list(tmp_path):
    p = tmp_path / "recon.toml"
    p.write_text('[mapping]\nteam_labels = ["team", "app.kubernetes.io/part-of"]\n')
    assert load_config(p).mapping.effective_team_labels == ("team", "app.kubernetes.io/part-of")
    p.write_text('[mapping]\nteam_labels = "team"\n')
    with pytest.raises(ValueError, match=r"\[mapping\] team_labels"):
        load_config(p)


def test_cost_centers_map_teams_and_reach_the_costs_file(tmp_path):
    import duckdb

    from recon.build.settings import write_config
    from recon.outputs.exports import cost_centers

    p = tmp_path / "recon.toml"
    p.write_text('[mapping]\ncost_centers = { nlp = "CC-4100", "ml search" = "CC-4200" }\n')
    cfg = load_config(p)
    assert cfg.mapping.cost_centers == {"nlp": "CC-4100", "ml search": "CC-4200"}
    assert load_config(None).mapping.cost_centers == {}
    # what the build writes is what the export reads (config.settings, JSON)
    con = duckdb.connect()
    con.execute("create schema config")
    write_config(con, cfg, None, None)
    assert cost_centers(con) == {"nlp": "CC-4100", "ml search": "CC-4200"}
    write_config(con, load_config(None), None, None)
    assert cost_centers(con) == {}
    # a cost center is text: a number is refused, naming the key
    p.write_text('[mapping]\ncost_centers = { nlp = 4100 }\n')
    with pytest.raises(ValueError, match=r"\[mapping\] cost_centers\.nlp"):
        load_config(p)
