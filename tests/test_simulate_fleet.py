"""Placing simulated clusters in one fleet (recon/simulate/fleet.py), as the multi-cluster
tests and bench/scaling.py, bench/shards.py do."""

from recon.simulate import simulate
from recon.simulate.fleet import ACCOUNT_FILES, place_cluster


def test_a_cluster_is_placed_with_every_runpod_file_its_subfolders_included(tmp_path):
    """With two endpoints the simulator saves the second one's workers as a user's curl does,
    under runpod/serverless/<id>/workers.jsonl: a folder inside runpod/ must be copied, not
    opened as a file (the benches' fleets stopped there)."""
    sim = tmp_path / "sim"
    simulate(sim, seed=7, days=1, nodes=2, endpoints=2)
    sub = sorted((sim / "runpod").glob("serverless/*/workers.jsonl"))
    assert sub, "the simulator saved no endpoint's workers in a subfolder"
    tree = tmp_path / "tree"
    for k, name in enumerate(["c0", "c1"]):
        place_cluster(sim, tree, name, first=k == 0, runpod=tree / "runpod" / f"pull={name}")
    for name in ("c0", "c1"):
        for f in sub:
            rel = f.relative_to(sim / "runpod")
            assert (tree / "runpod" / f"pull={name}" / rel).read_bytes() == f.read_bytes()
    # the account's own scenarios once: c0 has them, c1 not
    fixed = [p.name for p in (sim / "runpod").iterdir() if p.name in ACCOUNT_FILES]
    assert fixed
    assert all((tree / "runpod" / "pull=c0" / n).exists() for n in fixed)
    assert not any((tree / "runpod" / "pull=c1" / n).exists() for n in fixed)
    # each cluster's watch lines name it, not the simulator's cluster
    watch = (tree / "k8s" / "cluster=c1" / "watch-pods-00.jsonl").read_text()
    assert '"sim-cluster"' not in watch and '"c1"' in watch
