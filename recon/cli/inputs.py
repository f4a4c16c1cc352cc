"""`recon simulate` and `recon collect`: input folders, simulated or collected from clusters."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from ..outputs.summary import console, err
from .app import (
    _day,
    _fail,
    _logging,
)


def simulate(out: Path = typer.Option(..., help="Folder to write"),
             seed: int = 7, days: int = 2, nodes: int = 4, endpoints: int = 2,
             scale: float = typer.Option(1.0, help="Multiplies jobs per session and serverless load"),
             start: str = typer.Option("2026-06-01", help="First UTC day"),
             force: bool = typer.Option(False, "--force", help="Clear an earlier simulation's "
                                        "files from OUT first (only the files it wrote: "
                                        "anything else in OUT makes it refuse)"),
             gpu_sharing: bool = typer.Option(False, "--gpu-sharing",
                                              help="Add a node whose GPU is time-sliced 4 ways, "
                                                   "shared by two teams' pods (raises "
                                                   "GPU_SHARED_OVERSUBSCRIBED)")):
    """Write a realistic input folder plus expected/ground_truth.json.

    Example: recon simulate --out /tmp/sim --days 3 --nodes 8 --seed 1
    """
    from ..simulate import output
    from ..simulate import simulate as sim

    start_day = _day(start, "--start")
    if out.exists() and not out.is_dir():
        _fail(f"--out {out} is a file, not a folder")
    if not output.is_empty(out):
        # two fleets in one folder would reconcile as one, against neither ground truth
        if not force:
            _fail(f"{out} is not empty: a simulation into it would mix two fleets. Choose an "
                  "empty or new folder, or --force to clear an earlier simulation's files")
        try:
            gone = output.clear(out)
        except ValueError as e:
            _fail(str(e))
        console.print(f"Cleared {gone} files of an earlier simulation from {out}")
    r = sim(out, seed=seed, days=days, nodes=nodes, endpoints=endpoints, scale=scale,
            start_day=start_day, gpu_sharing=gpu_sharing)
    console.print(f"Wrote {r['files']} input files to {out} (config: {out}/recon.toml, "
                  f"ground truth: {out}/expected/ground_truth.json)")


def collect(landing: Path = typer.Option(Path("data/landing"), help="Landing area to append to"),
            kubeconfig: str | None = typer.Option(None, help="kubeconfig path (default: "
                                                  "in-cluster, else ~/.kube/config)"),
            context: list[str] = typer.Option([], help="kube context; repeat for several "
                                              "clusters, or 'all'"),
            once: bool = typer.Option(False, help="List everything once and exit"),
            run_seconds: float | None = typer.Option(None, help="Stop after this long"),
            verbose: bool = typer.Option(False, "-v")):
    """Watch pods, events, nodes, jobs and KEDA objects; append every version to LANDING.

    Example: recon collect --landing /data/landing --context prod-eu --context prod-us
    """
    import binascii
    import signal
    import threading

    import yaml
    from kubernetes.config.config_exception import ConfigException

    from connectors.kubernetes import check_unique_names, collect_once, default_clusters
    from connectors.kubernetes import collect as k8s_collect

    _logging(verbose)
    kc_name = kubeconfig or "the default kubeconfig (~/.kube/config or $KUBECONFIG)"
    where = kc_name
    try:
        clusters = default_clusters(kubeconfig, (context if context != ["all"] else "all") or None)
        check_unique_names(clusters)
        # loaded here, once, and handed to the collector: a bad context (missing user, bad
        # base64 key data) is this error, not a traceback from inside the collector
        configurations = {}
        for cl in clusters:
            where = ("the in-cluster service account" if cl.in_cluster
                     else f"{kc_name}, context {cl.context!r}" if cl.context else kc_name)
            configurations[cl.name] = cl.configuration()
    # each a sentence, not a traceback: a missing or unreadable kubeconfig, a mistyped --context,
    # two contexts of one cluster name, bad base64 key data (ValueError), a file that is not a
    # mapping or an entry of the wrong type (TypeError, AttributeError)
    except (ConfigException, OSError, yaml.YAMLError, ValueError, TypeError,
            AttributeError) as e:
        if isinstance(e, binascii.Error):
            why = f"certificate or key data is not valid base64 ({e})"
        elif isinstance(e, (TypeError, AttributeError)):
            why = ("not a kubeconfig, or an entry of the wrong type (a YAML mapping with lists "
                   f"of clusters, contexts and users is expected; {type(e).__name__}: {e})")
        else:
            # a YAML error may quote the offending line (a token): only its position is kept
            why = " ".join(ln.strip() for ln in str(e).splitlines()
                           if ln.strip() and not ln.startswith("    "))
        _fail(f"{where}: {why}")
    if once:
        c = collect_once(landing, clusters, configurations=configurations)
        if failed := c.failed_lists():  # a failed list fails the command: not exit 0
            console.print(c.snapshot()["totals"])
            _fail(f"{len(failed)} list(s) failed: {', '.join(failed)} (the errors above say why); "
                  "what did list was landed", code=1)
    else:
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        err.print(f"collecting from {len(clusters)} cluster(s) into {landing}; Ctrl-C or SIGTERM stops")
        try:
            c = k8s_collect(landing, clusters, stop_event=stop, run_seconds=run_seconds,
                            on_progress=lambda snap: err.print(
                                f"[dim]{escape(str(snap['totals']))}[/dim]"),
                            configurations=configurations)
        except KeyboardInterrupt:
            stop.set()
            return
    console.print(c.snapshot()["totals"])
