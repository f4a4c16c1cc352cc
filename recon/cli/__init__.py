"""`recon`: a thin command line over the library. Every command has help and an example.

`app` holds the Typer app and what the commands share; the commands live by what they work on:
`inputs` (simulate, collect), `run` (run, demo, serve), `query` (query, quarantine, schema) and
`outputs` (export, publish, report, whatif, waste, check). They are registered here, in the order `recon --help`
lists them.
"""

from __future__ import annotations

from . import inputs, outputs, query, run
from .app import app

app.command()(inputs.simulate)
app.command("run")(run.run_cmd)
app.command()(run.demo)
app.command()(query.query)
app.command()(query.quarantine)
app.command()(run.serve)
app.command("export")(outputs.export_cmd)
app.command("publish")(outputs.publish_cmd)
app.command("report")(outputs.report_cmd)
app.command("schema")(query.schema_cmd)
app.command()(inputs.collect)
app.command("whatif")(outputs.whatif_cmd)
app.command("waste")(outputs.waste_cmd)
app.command("check")(outputs.check_cmd)


def main():
    app()
