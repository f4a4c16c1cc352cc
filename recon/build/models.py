"""The SQL models in `sql/` and the order a run builds them in.

Each file `sql/<layer>/<name>.sql` holds one SELECT and builds the table `<schema>.<name>`
(layer staging → schema staging, intermediate → intermediate, marts → marts, checks → checks).
How the build treats a model (incremental, bounds, window, scope) is declared beside it, in
`sql/<layer>/_models.toml` (`recon.build.model_settings`). A staging model with
`incremental = { strategy = "merge", key, order }` yields every row; the build keeps one per
key, the first in its order: the same rule for full builds
(`recon.build.incremental.create_deduped`) and merges (`StagingState.merge`).
"""

from __future__ import annotations

import re
from pathlib import Path

SQL_DIR = Path(__file__).resolve().parent.parent.parent / "sql"
LAYERS = ("staging", "scope", "intermediate", "marts", "checks")


def sql_models() -> list[tuple[str, str, Path]]:
    """Every model, layer by layer; inside a layer, a model comes after those it reads."""
    out = []
    for layer in LAYERS:
        models = {p.stem: p for p in sorted((SQL_DIR / layer).glob("*.sql"))}
        # references in code, not in comments (a comment may name the model its rows go to)
        code = {n: re.sub(r"--[^\n]*", "", p.read_text()) for n, p in models.items()}
        deps = {n: {m for m in models if m != n and re.search(rf"\b{layer}\.{m}\b", code[n])}
                for n in models}
        done: list[str] = []
        while len(done) < len(models):
            ready = [n for n in models if n not in done and deps[n] <= set(done)]
            if not ready:
                raise RuntimeError(f"sql/{layer}: circular references among {sorted(set(models) - set(done))}")
            done.extend(ready)
        out.extend((layer, n, models[n]) for n in done)
    return out


def build_order(windowed: bool) -> list[tuple[str, str, Path]]:
    """The models a run builds, in order. A windowed run builds sql/scope/ after staging (and
    after the intermediate models with `scope = "before"`, which the scope reads); a full run
    skips sql/scope/."""
    # (imported here: model_settings reads SQL_DIR and LAYERS from this module)
    from .model_settings import settings_of

    models = sql_models()
    if not windowed:
        return [m for m in models if m[0] != "scope"]
    before = [m for m in models if m[0] == "intermediate" and settings_of(*m[:2]).scope_before]
    rest = [m for m in models if m[0] not in ("staging", "scope") and m not in before]
    return ([m for m in models if m[0] == "staging"] + before
            + [m for m in models if m[0] == "scope"] + rest)
