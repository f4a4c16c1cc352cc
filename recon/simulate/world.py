"""The simulated world: what really happened, second by second.

Instances are Runpod pods serving as Kubernetes GPU nodes (KEDA ScaledJob batch work on them),
plus a forgotten pod, an unmapped dev pod, short-lived pods only a saved v1 bill knows, a
network volume nobody uses, and Runpod Serverless endpoints. Everything here is ground truth;
`emit_*` turn it into the files real systems write, and `truth` derives the numbers the
reconciliation must find.

Instance times are whole epoch seconds (Kubernetes timestamps have second precision);
serverless times are epoch milliseconds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal

# SAMPLE RATES for the simulator only (labelled as such in the recon.toml it writes).
SAMPLE_GPU_PER_HOUR = {
    "NVIDIA A100 80GB PCIe": Decimal("1.64"),
    "NVIDIA L40S": Decimal("0.86"),
    "NVIDIA GeForce RTX 4090": Decimal("0.69"),
}
SAMPLE_SERVERLESS_PER_SECOND = Decimal("0.00031")
SAMPLE_DISK_RUNNING_GB_MONTH = Decimal("0.10")
SAMPLE_VOLUME_STOPPED_GB_MONTH = Decimal("0.20")
SAMPLE_NETWORK_VOLUME_GB_MONTH = Decimal("0.07")
HOURS_PER_MONTH = 730
CLUSTER = "sim-cluster"
COOLDOWN = 300  # a ScaledObject's cooldownPeriod (1 → 0 only); a ScaledJob has none
# After a ScaledJob's last Job the node stays only for its scale-down (cluster autoscaler or the
# provider): within scale_down_grace_seconds + tail_tolerance_seconds (60 + 60 s by default).
NODE_SCALE_DOWN = (20, 90)
POLLING = 30
PROBE_PERIOD = 10
PROBE_FAILURES = 30  # startup budget = 300 s


@dataclass
class Job:
    uid: str
    name: str
    namespace: str
    team: str
    node: str | None
    gpus: int
    created: int
    scheduled: int | None
    pull_start: int | None = None
    pull_end: int | None = None
    container_starts: list[int] = field(default_factory=list)  # one per run (restarts)
    killed_at: list[int] = field(default_factory=list)  # startup-probe kills
    ready: int | None = None
    finished: int | None = None
    deleted: int | None = None
    exit_reason: str | None = None
    replica_of: str | None = None  # a Deployment's replica (recon.simulate.keda), not a Job's pod


@dataclass
class Session:
    start: int
    stop: int
    node_uid: str
    node_registered: int
    node_ready: int


@dataclass
class Instance:
    pod_id: str
    role: str
    node_name: str | None  # None: not a Kubernetes node (unmapped)
    mapping: str  # label | provider | name | none
    gpu_type: str
    gpu_count: int
    volume_gb: int
    container_gb: int
    created: int
    terminated: int | None  # None: still exists at the end of the window
    sessions: list[Session] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    billed: bool = True
    billing_format: str = "v2"

    @property
    def cost_per_hour(self) -> Decimal:
        return SAMPLE_GPU_PER_HOUR[self.gpu_type] * self.gpu_count


@dataclass
class WorkerSession:
    worker_id: str
    start_ms: int
    exec_windows: list[tuple[int, int]]  # [start_ms, end_ms) per job
    job_ids: list[str]
    submitted_ms: list[int]
    stop_ms: int

    @property
    def billed_ms(self) -> int:
        d = self.stop_ms - self.start_ms
        return -(-d // 1000) * 1000  # rounded up to the next whole second


@dataclass
class Endpoint:
    endpoint_id: str
    name: str
    idle_timeout_s: int
    sessions: list[WorkerSession] = field(default_factory=list)


@dataclass
class NetworkVolume:
    volume_id: str
    size_gb: int
    created: int


@dataclass
class World:
    seed: int
    start_day: date
    days: int
    instances: list[Instance]
    endpoints: list[Endpoint]
    volumes: list[NetworkVolume]
    keda_cycles: list = field(default_factory=list)  # recon.simulate.keda.Cycle
    hpa_cycles: list = field(default_factory=list)  # recon.simulate.hpa_slow.HpaCycle

    @property
    def window_start(self) -> int:
        return day_epoch(self.start_day)

    @property
    def window_end(self) -> int:
        return self.window_start + 86400 * self.days


def day_epoch(d: date) -> int:
    return int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp())


ALPHABET = "abcdefghijkmnpqrstuvwxyz0123456789"
assert len(ALPHABET) == 34


class Ids:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def short(self, n: int = 10) -> str:
        # The draws of rng.choice(ALPHABET) per character (Random._randbelow_with_getrandbits:
        # 6 bits, redrawn while >= 34), inlined: same sequence, same ids, a third of the time.
        gb = self.rng.getrandbits
        out = []
        for _ in range(n):
            r = gb(6)
            while r >= 34:
                r = gb(6)
            out.append(ALPHABET[r])
        return "".join(out)

    def uid(self) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


ROLES = ("normal", "long_tail", "stopped", "unbilled")
TEAMS = ("vision", "nlp", "search")


def _run_jobs(rng, ids, inst: Instance, sess_start: int, node_ready: int, n_jobs: int,
              team: str, budget_breaker: bool) -> int:
    """Schedule n_jobs KEDA ScaledJob pods on the instance's GPUs; return the last finish."""
    chains = [sess_start + rng.randint(0, 20) for _ in range(inst.gpu_count)]
    last_finish = node_ready
    for j in range(n_jobs):
        c = min(range(len(chains)), key=lambda k: chains[k])
        created = chains[c]
        name = f"batch-infer-{ids.short(5)}-{ids.short(5)}"
        job = Job(uid=ids.uid(), name=name, namespace="ml-batch", team=team, node=inst.node_name,
                  gpus=1, created=created, scheduled=max(created + rng.randint(1, 4), node_ready + 2))
        job.pull_start = job.scheduled + 1
        job.pull_end = job.pull_start + rng.randint(20, 90)
        start = job.pull_end + 1
        budget = PROBE_PERIOD * PROBE_FAILURES
        if budget_breaker and j == 0:
            job.container_starts.append(start)
            kill = start + budget
            job.killed_at.append(kill)
            start = kill + rng.randint(1, 5)
            load = rng.randint(60, 150)  # warm cache on the second try
        else:
            load = rng.randint(60, 240)
        job.container_starts.append(start)
        job.ready = start + load
        job.finished = job.ready + rng.randint(900, 2700)
        job.exit_reason = "Completed"
        job.deleted = job.finished + rng.randint(30, 300)
        inst.jobs.append(job)
        chains[c] = job.finished + rng.randint(5, POLLING)
        last_finish = max(last_finish, job.finished)
    return last_finish


def _session(rng, ids, inst: Instance, start: int, n_jobs: int, tail: int, team: str,
             budget_breaker: bool = False) -> None:
    registered = start + rng.randint(50, 150)
    ready = registered + rng.randint(10, 40)
    last = _run_jobs(rng, ids, inst, start, ready, n_jobs, team, budget_breaker)
    inst.sessions.append(Session(start=start, stop=last + tail, node_uid=ids.uid(),
                                 node_registered=registered, node_ready=ready))


def build_world(seed: int = 7, days: int = 2, nodes: int = 4, endpoints: int = 2,
                scale: float = 1.0, start_day: date = date(2026, 6, 1)) -> World:
    rng = random.Random(seed)
    ids = Ids(rng)
    w0 = day_epoch(start_day)
    end = w0 + 86400 * days
    gpu_types = list(SAMPLE_GPU_PER_HOUR)
    n_jobs = max(1, round(3 * scale))
    instances: list[Instance] = []
    mappings = ("label", "provider", "name")

    def new_inst(slot: int, role: str, created: int, terminated: int | None) -> Instance:
        pod_id = ids.short(14)
        mapping = mappings[(slot + len(instances)) % 3]
        node = pod_id if mapping == "name" else f"gpu-{slot}-{ids.short(5)}"
        inst = Instance(pod_id=pod_id, role=role, node_name=node, mapping=mapping,
                        gpu_type=gpu_types[slot % len(gpu_types)], gpu_count=1 + (slot % 2),
                        volume_gb=rng.choice((20, 50, 100)), container_gb=rng.choice((20, 40)),
                        created=created, terminated=terminated)
        instances.append(inst)
        return inst

    for slot in range(nodes):
        role = ROLES[slot % len(ROLES)]
        team = TEAMS[slot % len(TEAMS)]
        if role == "stopped":
            inst = new_inst(slot, role, created=0, terminated=None)
            for d in range(days):
                start = w0 + d * 86400 + 9 * 3600 + rng.randint(0, 3600)
                if inst.sessions:
                    # one pod runs one session at a time: at large scales a day's jobs outlast
                    # the day (scale 27: ~24-47 h), and an overlapping next session billed hours
                    # twice over (up to 7,200 s of compute in an hour, 167,071 s in a day)
                    start = max(start, inst.sessions[-1].stop + 600)
                    if start >= end:
                        break
                _session(rng, ids, inst, start, n_jobs, rng.randint(*NODE_SCALE_DOWN), team)
            inst.created = inst.sessions[0].start
            continue
        for d in range(days):
            day0 = w0 + d * 86400
            if role == "normal":
                starts = [day0 + 6 * 3600 + rng.randint(0, 3600), day0 + 14 * 3600 + rng.randint(0, 3600)]
            elif role == "long_tail" and d < days - 1:
                starts = [day0 + 20 * 3600 + 1800 + rng.randint(0, 1200)]  # tail crosses midnight
            else:
                starts = [day0 + 8 * 3600 + rng.randint(0, 3600)]
            for s in starts:
                inst = new_inst(slot, role, created=s, terminated=None)
                if role == "long_tail":
                    _session(rng, ids, inst, s, n_jobs, 2 * 3600 + rng.randint(0, 3600), team,
                             budget_breaker=True)
                else:
                    _session(rng, ids, inst, s, n_jobs, rng.randint(*NODE_SCALE_DOWN), team)
                inst.terminated = inst.sessions[-1].stop
                inst.billed = role != "unbilled"

    # A batch pod cancelled while Pending (deleted before it ever ran), once a day.
    first = next((i for i in instances if i.role == "normal"), None)
    for d in range(days if first else 0):
        t = w0 + d * 86400 + 7 * 3600
        first.jobs.append(Job(uid=ids.uid(), name=f"batch-infer-{ids.short(5)}-{ids.short(5)}",
                              namespace="ml-batch", team="vision", node=None, gpus=1, created=t,
                              scheduled=None, deleted=t + 120))

    # A forgotten pod: a Ready GPU node, billed all window, nothing ever scheduled on it. A node
    # pool reserved for one team brought it up, and labels its nodes with that team.
    forgotten = new_inst(nodes, "forgotten", created=w0, terminated=None)
    forgotten.sessions.append(Session(start=w0, stop=end, node_uid=ids.uid(),
                                      node_registered=w0 + 80, node_ready=w0 + 100))
    # A dev pod outside Kubernetes, stopped overnight; its bill was saved from the v1 API. It
    # stops at 20:35 and starts again at 09:20: those hours bill running and stopped disk.
    dev = new_inst(nodes + 1, "unmapped", created=w0 + 9 * 3600, terminated=None)
    dev.node_name, dev.mapping, dev.billing_format = None, "none", "v1"
    for d in range(days):
        s = w0 + d * 86400 + 9 * 3600 + (1200 if d else 0)
        dev.sessions.append(Session(start=s, stop=w0 + d * 86400 + 20 * 3600 + 2100, node_uid="",
                                    node_registered=s, node_ready=s))

    eps: list[Endpoint] = []
    for e in range(endpoints):
        ep = Endpoint(endpoint_id=ids.short(12), name=f"infer-{e}", idle_timeout_s=5)
        lingering = e % 2 == 1
        for d in range(days):
            for _ in range(max(1, round(12 * scale))):
                start_ms = (w0 + d * 86400 + rng.randint(600, 23 * 3600)) * 1000
                t = start_ms + rng.randint(5_000, 40_000)  # cold start: init + model load
                windows, jids, subs = [], [], []
                for k in range(rng.randint(1, 4)):
                    if k:
                        t += rng.randint(100, 4_000)  # idle between requests < idle timeout
                    sub = (start_ms - rng.randint(500, 2000)) if k == 0 else t - rng.randint(50, 900)
                    dur = rng.randint(1_500, 40_000)
                    windows.append((t, t + dur))
                    jids.append(f"{ids.short(8)}-{ids.short(4)}-{ids.short(4)}-u1")
                    subs.append(sub)
                    t += dur
                idle_ms = ep.idle_timeout_s * 1000
                if lingering and rng.random() < 0.4:
                    idle_ms += rng.randint(60, 300) * 1000  # worker lingered past its timeout
                ep.sessions.append(WorkerSession(worker_id=ids.short(8), start_ms=start_ms,
                                                 exec_windows=windows, job_ids=jids,
                                                 submitted_ms=subs, stop_ms=t + idle_ms))
        eps.append(ep)

    vols = [NetworkVolume(volume_id=ids.short(10), size_gb=200, created=w0 - 86400 * 3)]
    # Once a day a pod outside Kubernetes lives 20-58 min between two inventory snapshots (taken
    # at :30) and is terminated: only its saved v1 bill knows it (drawn last, so that the rest
    # of the world is the same as without it).
    for d in range(days):
        born = w0 + d * 86400 + 18 * 3600 + 60 * rng.randint(31, 50)
        gone = min(born + 60 * rng.randint(20, 58), w0 + d * 86400 + 19 * 3600 + 29 * 60)
        brief = new_inst(nodes + 2, "bill_only", created=born, terminated=gone)
        brief.node_name, brief.mapping, brief.billing_format = None, "none", "v1"
        brief.sessions.append(Session(start=born, stop=gone, node_uid="", node_registered=born,
                                      node_ready=born))
    world = World(seed=seed, start_day=start_day, days=days, instances=instances, endpoints=eps,
                  volumes=vols)
    from .hpa_slow import add_hpa_fleet  # (they build on this module's types)
    from .keda import add_keda_fleet

    add_keda_fleet(world)
    add_hpa_fleet(world)
    return world
