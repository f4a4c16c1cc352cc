"""The reference (docs/reference.md) documents what the code does: every command, every mart
column, every finding code; its example queries run."""

import os
import re
from pathlib import Path

from typer.main import get_command

from recon.cli import app
from recon.schema import markdown

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = (ROOT / "docs" / "reference.md").read_text()
README = (ROOT / "README.md").read_text()


def test_reference_marts_section_is_recon_schema():
    block = REFERENCE.split("<!-- schema:begin")[1].split("-->", 1)[1]
    block = block.split("<!-- schema:end -->")[0]
    assert block.strip() == markdown().strip()


def test_every_command_is_documented_with_help_and_example():
    cmds = get_command(app).commands
    for name, cmd in cmds.items():
        assert f"`recon {name}" in REFERENCE, name
        assert f"`recon {name}" in README, name  # the product page lists them in brief
        assert cmd.help and "Example:" in cmd.help, name


def test_every_finding_code_in_the_sql_is_documented():
    sql = "\n".join(p.read_text() for p in
                    (ROOT / "sql").rglob("*.sql"))
    emitted = set(re.findall(r"'([A-Z]+(?:_[A-Z]+)+)'", sql))
    assert len(emitted) >= 15  # the design's 14 codes and RATE_MISSING
    for c in emitted:
        assert f"`{c}`" in REFERENCE, c


def test_the_example_queries_run_on_a_reconciled_fleet(sim_run):
    """Every query under "Example queries finance asks" runs as written (the first one joins
    two tables that both have `amount`: an unqualified column would fail to bind), and the tail
    query hands out exactly the fleet's tail money."""
    import duckdb

    block = REFERENCE.split("## Example queries finance asks", 1)[1].split("```sql", 1)[1]
    block = block.split("```", 1)[0]
    statements = [s for s in re.split(r";\s*\n", block) if re.search(r"^\s*(select|with)\b", s,
                                                                         re.MULTILINE)]
    assert len(statements) >= 5
    con = duckdb.connect(str(sim_run["db"]), read_only=True)
    try:
        con.execute("set TimeZone = 'UTC'")
        for s in statements:
            con.execute(s).fetchall()  # raises on any binder or parser error
        # the simulated days are 2026-06-01/02: the tail query over all of them
        tail = statements[0].replace("s.day >= current_date - 7", "true")
        by_team = con.execute(tail).fetchall()
        total = con.execute("select sum(amount) from marts.billed_segments "
                            "where category = 'tail'").fetchone()[0]
    finally:
        con.close()
    assert len(by_team) >= 2 and sum(r[1] for r in by_team) == total > 0


def test_the_documentation_points_nowhere_outside_the_repository():
    """Every Markdown file of the repository stands on its own: no link or path outside it."""
    docs = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
        docs += [Path(folder) / f for f in files if f.endswith(".md")]
    assert len(docs) >= 8
    for p in docs:
        text = p.read_text(encoding="utf-8")
        for outside in ("../shared", "shared/reference", "shared/DESIGN", "DESIGN.md"):
            assert outside not in text, (p.relative_to(ROOT), outside)
        for target in re.findall(r"\]\((?!https?://|#|mailto:)([^)#\s]+)", text):
            assert (p.parent / target).resolve().is_relative_to(ROOT), (p.relative_to(ROOT), target)
            assert (p.parent / target).exists(), (p.relative_to(ROOT), target)


def test_the_readmes_questions_are_one_query_each_and_answer_them(sim_run):
    """The five questions under "Questions the marts answer" run as written on a reconciled
    fleet (its days are 2026-06-01/02: "current_date" is taken as 2026-06-03), and their
    answers add up to what the marts hold."""
    import duckdb

    block = README.split("## Questions the marts answer", 1)[1].split("```sql", 1)[1]
    block = block.split("```", 1)[0].replace("current_date", "date '2026-06-03'")
    statements = [s for s in re.split(r";\s*\n", block) if re.search(r"^\s*select\b", s,
                                                                      re.MULTILINE)]
    assert len(statements) == 5
    con = duckdb.connect(str(sim_run["db"]), read_only=True)
    try:
        answers = [con.execute(s).fetchall() for s in statements]
        waste, at_stake, kedas, stored = con.execute("""
            select (select sum(amount) from marts.waste),
                   (select sum(amount_at_stake) from marts.findings),
                   (select sum(amount) from marts.waste
                    where cause in ('keda_cooldown', 'hpa_scale_down')),
                   (select sum(amount) from marts.waste
                    where cause in ('storage_lingering', 'network_volume_unused'))""").fetchone()
        billed = dict(con.execute("select day, sum(billed_amount) from marts.resource_day "
                                  "group by day").fetchall())
    finally:
        con.close()
    by_team, by_scaler, by_owner, storage, work = answers
    assert len(by_team) >= 2 and sum(r[1] for r in by_team) == waste
    assert by_scaler and sum(r[3] for r in by_scaler) == kedas
    assert sum(r[3] or 0 for r in by_owner) == at_stake
    assert sum(r[1] for r in storage) == stored
    assert {r[0] for r in work} == set(billed) and all(0 < r[2] < 1 for r in work)
