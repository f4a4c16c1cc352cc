-- grain: one row per (day, team, namespace, workload, resource_id, category, owner_kind,
-- owner_name, cause): who the bill's money went to. The amounts of a resource-day add up to its
-- billed_amount exactly. `cause` is marts.waste's for money that was not work (NULL for work:
-- busy, execution, storage_running, a network volume's attached share); owner_kind/owner_name
-- the workload's owner (intermediate.int_k8s__pod_owners) or the segment's (a node: `Node`).
-- A startup segment's cause here is `startup` whole: marts.waste alone splits the runs a
-- startup probe killed out of it (`probe_restarts`).
-- Exact decimals: a share (slots held ÷ capacity, seconds ÷ seconds) is a ratio DuckDB computes
-- in double, so each piece is cast to DECIMAL where it is cut (deterministic: the same inputs
-- give the same digits) and every sum after that is a decimal sum (order-free: a rerun, a
-- parallel plan or an incremental build gives the same rows). What the cuts lose (< 1e-9 USD
-- per resource-day) goes to the resource-day's largest row (`tie` below); a gap over 1e-6 USD
-- is the `unreconciled` row of the last rule.
-- Rules (OpenCost-style: leftovers are rows, so totals tie to the bill):
-- * instance busy/startup segments: each GPU workload present gets the GPU fraction it held ÷
--   max(node's physical GPUs, fractions held), counted in slots (intermediate.int_k8s__node_gpus:
--   one replica of a time-sliced GPU, one compute slice of a MIG GPU, else one GPU): a pod
--   holding 1 of 4 replicas of a node's one GPU gets 1/4, `nvidia.com/mig-1g.10gb: 1` on an
--   A100 1/7; the share nobody held while it worked → `__idle__`. No node's pods get more than
--   its bill;
-- * the rest of a startup segment, node boot, idle_gap, tail and unobserved: the owners of
--   intermediate.int_resource__segment_owners (the rules of marts.waste) by their weights, as
--   their team, namespace (`__node__` for a node's team label) and owner name as `workload`; a
--   segment with no owner → `__idle__` (`__unallocated__` when unobserved);
-- * storage_running follows the resource-day's compute split (by seconds); storage_lingering
--   → `__idle__`; network volumes: the lingering part of each hour → `__idle__`, the attached
--   part → `__unallocated__` (a volume has no team);
-- * serverless idle → `__idle__`; execution, cold_start, rounding, unobserved → `__unallocated__`
--   (endpoints carry no team label);
-- * what the pieces above do not explain of a resource-day's bill (a missing rate: compute
--   in no segment) → `__unallocated__`, category `unreconciled` (`tie`, `adjustments`).
-- Leftover rows repeat the marker as namespace and name the billed resource as workload.
-- A pod without a team label counts as `__unallocated__`.
-- Every piece belongs to one (resource, day): each source is cut to the run's days first (a
-- windowed run's segments reach back over whole compute islands; the marts hold every day).
with instance_segments as (
    select * from intermediate.int_resource__instance_segments
),

workloads as (
    select * from intermediate.int_resource__workloads
),

gpu_capacity as (
    select * from intermediate.int_resource__gpu_capacity
),

segment_owners as (
    select * from intermediate.int_resource__segment_owners
),

pod_owners as (
    select * from intermediate.int_k8s__pod_owners
),

network_volume_buckets as (
    select * from intermediate.int_storage__network_volume_buckets
),

resource_day as (
    select * from marts.resource_day
),

-- read twice below, so named there directly (marts.billed_segments): DuckDB would
-- materialise an import CTE read twice
days as (
    select cfg('day_from')::date as lo, cfg('day_to')::date as hi
),

segments as (
    select g.* from instance_segments g, days
    where g.day between days.lo and days.hi
),

present as (
    select g.resource_id, g.seg_start, g.day, g.category, g.ms, g.amount_usd, g.expected_usd,
           w.team, w.namespace, w.workload, w.gpu_slots as gpus, o.owner_kind, o.owner_name,
           sum(w.gpu_slots) over (partition by g.resource_id, g.seg_start) as held
    from segments g
    join workloads w
      on w.resource_id = g.resource_id and g.category in ('busy', 'startup')
     and w.scheduled_at < g.seg_end and w.window_end_at > g.seg_start
    left join pod_owners o on o.cluster is not distinct from w.cluster and o.pod_uid = w.pod_uid
),

shares as (
    select p.*, greatest(coalesce(c.slots, 0), p.held) as total
    from present p left join gpu_capacity c using (resource_id)
),

held_pieces as (
    select resource_id, day, category, coalesce(team, '__unallocated__') as team,
           coalesce(namespace, '__unallocated__') as namespace, workload,
           cast(ms * gpus / total as decimal(38, 9)) as ms,
           cast(amount_usd * gpus / total as decimal(38, 12)) as amount,
           cast(expected_usd * gpus / total as decimal(38, 12)) as expected_amount,
           owner_kind, owner_name, case when category = 'startup' then 'startup' end as cause
    from shares
),

unheld_all as (
    -- the share of each busy/startup segment no workload held, and segments with no workload
    select g.resource_id, g.seg_start, g.day, g.category,
           case when g.category = 'unobserved' then '__unallocated__' else '__idle__' end as marker,
           cast(g.ms * (1 - coalesce(s.held_share, 0)) as decimal(38, 9)) as ms,
           cast(g.amount_usd * (1 - coalesce(s.held_share, 0)) as decimal(38, 12)) as amount,
           cast(g.expected_usd * (1 - coalesce(s.held_share, 0)) as decimal(38, 12)) as expected_amount
    from segments g
    left join (select distinct resource_id, seg_start, held / total as held_share from shares) s
      using (resource_id, seg_start)
    where coalesce(s.held_share, 0) < 1
),

owner_weights as (
    select o.resource_id, o.seg_start, o.namespace, o.owner_kind, o.owner_name, o.team,
           o.weight / sum(o.weight) over (partition by o.resource_id, o.seg_start) as share
    from segment_owners o
    where o.weight > 0
),

segment_causes as (
    select distinct resource_id, seg_start, cause from segment_owners
),

unheld_pieces as (
    -- a non-work segment's owners (intermediate.int_resource__segment_owners: a tail's last
    -- pod, a gap's neighbours, the pods a node was brought up for, a node's team label) take it
    -- by their weights, as marts.waste does; the GPUs nobody held while others worked stay
    -- `__idle__` (the segment's owners are the workloads holding the rest)
    select u.resource_id, u.day, u.category,
           coalesce(w.team, u.marker) as team,
           coalesce(w.namespace, case when w.team is not null then '__node__' end, u.marker) as namespace,
           coalesce(w.owner_name, u.resource_id) as workload,
           cast(u.ms * coalesce(w.share, 1) as decimal(38, 9)) as ms,
           cast(u.amount * coalesce(w.share, 1) as decimal(38, 12)) as amount,
           cast(u.expected_amount * coalesce(w.share, 1) as decimal(38, 12)) as expected_amount,
           w.owner_kind, w.owner_name, c.cause
    from unheld_all u
    left join owner_weights w
      on w.resource_id = u.resource_id and w.seg_start = u.seg_start and u.category <> 'busy'
    left join segment_causes c
      on c.resource_id = u.resource_id and c.seg_start = u.seg_start and u.category <> 'busy'
),

compute_weights as (
    select resource_id, day, team, namespace, workload, sum(ms) as ms
    from (select resource_id, day, team, namespace, workload, ms from held_pieces
          union all
          select resource_id, day, team, namespace, workload, ms from unheld_pieces)
    group by all
),

storage_running as (
    select b.resource_id, b.day, b.category,
           coalesce(w.team, '__unallocated__') as team, coalesce(w.namespace, '__unallocated__') as namespace,
           coalesce(w.workload, b.resource_id) as workload,
           cast(b.seconds * 1000 * coalesce(w.ms / sum(w.ms) over (partition by b.resource_id, b.day), 1)
                as decimal(38, 9)) as ms,
           cast(b.amount * coalesce(w.ms / sum(w.ms) over (partition by b.resource_id, b.day), 1)
                as decimal(38, 12)) as amount,
           cast(b.expected_amount * coalesce(w.ms / sum(w.ms) over (partition by b.resource_id, b.day), 1)
                as decimal(38, 12)) as expected_amount,
           null as owner_kind, null as owner_name, null as cause
    from marts.billed_segments b
    cross join days
    left join compute_weights w on w.resource_id = b.resource_id and w.day = b.day and w.ms > 0
    where b.category = 'storage_running' and b.day between days.lo and days.hi
),

network_volume_days as (
    select volume_id as resource_id, cast(date_trunc('day', bucket_start) as date) as day,
           sum(lingering_ms) as lingering_ms, sum(attached_ms) as attached_ms,
           sum(cast(total_amount_usd * lingering_ms / bucket_ms as decimal(38, 12))) as lingering_usd,
           sum(cast(total_amount_usd * attached_ms / bucket_ms as decimal(38, 12))) as attached_usd
    from network_volume_buckets, days
    where bucket_ms > 0 and cast(date_trunc('day', bucket_start) as date) between days.lo and days.hi
    group by all
),

network_volume as (
    select resource_id, day, 'network_volume' as category,
           unnest(['__idle__', '__unallocated__']) as team,
           cast(unnest([lingering_ms, attached_ms]) as decimal(38, 9)) as ms,
           unnest([lingering_usd, attached_usd]) as amount,
           unnest(['network_volume_unused', null]) as cause
    from network_volume_days
),

other as (
    select resource_id, day, category,
           case when category in ('idle', 'storage_lingering') then '__idle__' else '__unallocated__' end as team,
           cast(seconds * 1000 as decimal(38, 9)) as ms, amount, expected_amount,
           case category when 'storage_lingering' then 'storage_lingering'
                         when 'idle' then 'serverless_idle' when 'rounding' then 'serverless_idle'
                         when 'cold_start' then 'serverless_cold_start'
                         when 'unobserved' then 'unobserved' end as cause
    from marts.billed_segments, days
    where (category in ('storage_lingering', 'cold_start', 'execution', 'idle', 'rounding')
           or (resource_kind = 'serverless' and category = 'unobserved'))
      and day between days.lo and days.hi
),

unioned as (
    select resource_id, day, category, team, namespace, workload, ms, amount, expected_amount,
           owner_kind, owner_name, cause
    from held_pieces
    union all select resource_id, day, category, team, namespace, workload, ms, amount, expected_amount,
                     owner_kind, owner_name, cause
    from unheld_pieces
    union all select * from storage_running
    union all select resource_id, day, category, team, team, resource_id, ms, amount, amount, null, null, cause
    from network_volume
    union all select resource_id, day, category, team, team, resource_id, ms, amount, expected_amount, null, null,
                     cause
    from other
),

pieces as (
    select day, team, namespace, workload, resource_id, category, owner_kind, owner_name, cause,
           cast(round(sum(ms)) as bigint) * 0.001::decimal(18, 3) as seconds,
           cast(sum(amount) as decimal(38, 12)) as amount,
           cast(sum(expected_amount) as decimal(38, 12)) as expected_amount
    from unioned
    where ms <> 0 or amount <> 0
    group by day, team, namespace, workload, resource_id, category, owner_kind, owner_name, cause
),

-- the resource-day's bill minus its pieces, in decimals: what cutting the shares lost
tie as (
    select b.resource_id, b.day, b.billed - coalesce(sum(p.amount), 0) as residual
    from (select resource_id, day, sum(billed_amount) as billed
          from resource_day, days where day between days.lo and days.hi
          group by all) b
    left join pieces p using (resource_id, day)
    group by b.resource_id, b.day, b.billed
    having b.billed - coalesce(sum(p.amount), 0) <> 0
),

largest as (
    select resource_id, day, team, namespace, workload, category, owner_kind, owner_name, cause
    from pieces semi join tie using (resource_id, day)
    qualify row_number() over (partition by resource_id, day
                               order by abs(amount) desc, team, namespace, workload, category,
                                        owner_kind, owner_name, cause) = 1
),

adjustments as (
    select t.day,
           coalesce(l.team, '__unallocated__') as team, coalesce(l.namespace, '__unallocated__') as namespace,
           coalesce(l.workload, t.resource_id) as workload, t.resource_id,
           coalesce(l.category, 'unreconciled') as category,
           l.owner_kind, l.owner_name, case when l.resource_id is null then 'unreconciled' else l.cause end as cause,
           0.000::decimal(18, 3) as seconds, t.residual as amount, cast(null as decimal(38, 12)) as expected_amount
    from tie t
    left join largest l on l.resource_id = t.resource_id and l.day = t.day and abs(t.residual) <= 0.000001
),

final as (
    select day, team, namespace, workload, resource_id, category,
           cast(sum(seconds) as decimal(37, 3)) as seconds,
           cast(sum(amount) as decimal(38, 12)) as amount,
           cast(sum(expected_amount) as decimal(38, 12)) as expected_amount,
           owner_kind, owner_name, cause
    from (select * from pieces union all by name select * from adjustments)
    group by day, team, namespace, workload, resource_id, category, owner_kind, owner_name, cause
    having sum(seconds) <> 0 or sum(amount) <> 0
)

select * from final
where day between cfg('day_from')::date and cfg('day_to')::date
order by day, team, namespace, workload, resource_id, category, owner_kind, owner_name, cause
