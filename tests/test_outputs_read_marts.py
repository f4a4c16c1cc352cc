"""The marts are the outputs' public contract: the report, the what-if, the exports, the FOCUS
export and the check read `marts.*` only, never the layers below (`intermediate.`, `staging.`,
`scope.`, `raw.`): a column an output needs is added to a mart (recon/schema.py documents it, an
expectations/marts.<name>.json suite gates it), not read from the model under it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OUTPUTS = ("report", "whatif", "exports", "focus", "check")
MODEL_LAYERS = ("staging", "scope", "intermediate", "marts", "checks")
BELOW_MARTS = re.compile(r"\b(intermediate|staging|scope|raw)\.[a-z_][a-z0-9_]*", re.IGNORECASE)


def _module_file(name: str) -> Path:
    """The module's source, wherever the house keeps it (recon/ or recon/outputs/)."""
    for p in (ROOT / "recon" / f"{name}.py", ROOT / "recon" / "outputs" / f"{name}.py"):
        if p.exists():
            return p
    raise AssertionError(f"no source file for the output module {name}")


def _sources(name: str) -> list[Path]:
    """The module and any .sql file it names (an output's queries may live in sql/)."""
    src = _module_file(name)
    files = [src]
    for ref in re.findall(r"[\w/.-]+\.sql\b", src.read_text(encoding="utf-8")):
        # (a model the module names, such as sql/marts/allocation.sql, builds a mart: it may)
        files += [p for p in ROOT.rglob(Path(ref).name) if ".venv" not in p.parts
                  and p.is_file() and p not in files and p.parent.name not in MODEL_LAYERS]
    # the queries it loads by name from sql/queries/ (recon.sqlfiles.query), and every query
    # named after it there
    queries = ROOT / "sql" / "queries"
    named = re.findall(r"""\bquery\(\s*["'](\w+)["']""", src.read_text(encoding="utf-8"))
    files += [queries / f"{q}.sql" for q in named if (queries / f"{q}.sql") not in files]
    files += [p for p in sorted(queries.glob(f"{name}__*.sql")) if p not in files]
    missing = [p for p in files if not p.exists()]
    assert not missing, missing
    return files


@pytest.mark.parametrize("name", OUTPUTS)
def test_output_reads_marts_only(name):
    found = []
    for path in _sources(name):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{n}: {m.group(0)}" for m in BELOW_MARTS.finditer(line)]
    assert not found, "outputs must read marts.*, not the layers below:\n" + "\n".join(found)


def test_the_check_catches_a_read_below_the_marts():
    assert BELOW_MARTS.search('"select * from intermediate.int_resource__workloads"')
    assert BELOW_MARTS.search("from staging.stg_k8s__nodes where")
    assert not BELOW_MARTS.search("from marts.workloads w join marts.instance_segments g")
