"""The README documents what the code does: every command, every mart column, every code."""

import re
from pathlib import Path

from typer.main import get_command

from recon.cli import app
from recon.schema import markdown

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_readme_marts_section_is_recon_schema():
    block = README.split("<!-- schema:begin")[1].split("-->", 1)[1].split("<!-- schema:end -->")[0]
    assert block.strip() == markdown().strip()


def test_every_command_is_documented_with_help_and_example():
    cmds = get_command(app).commands
    for name, cmd in cmds.items():
        assert f"`recon {name}" in README, name
        assert cmd.help and "Example:" in cmd.help, name


def test_every_finding_code_in_the_sql_is_documented():
    sql = "\n".join(p.read_text() for p in
                    (Path(__file__).resolve().parent.parent / "sql").rglob("*.sql"))
    emitted = {c for c in re.findall(r"'([A-Z]+(?:_[A-Z]+)+)'", sql)}
    assert len(emitted) >= 15  # the 14 DESIGN codes and RATE_MISSING
    for c in emitted:
        assert f"`{c}`" in README, c
