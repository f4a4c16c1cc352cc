-- grain: one row per (resource_id, day, cause, namespace, owner_kind, owner_name, team): every
-- billed second that is not work, and its money, by cause and by the owner it belongs to.
-- Causes, from marts.billed_segments' categories (docs/design.md, "Waste"):
-- * instance `tail` → `keda_cooldown` when the session's last pod ended by KEDA's scale to zero
--   (tail model scaler `scale_to_zero`), `hpa_scale_down` when by the HPA's N → 1
--   (`hpa_scale_in`), else `tail_after_exit` (`scaled_job`, `unknown`: the node's scale-down);
-- * `startup` → `startup`;
-- * instance `idle_gap` and `unobserved` → `bill_without_workload` when no GPU workload ran on
--   the resource that day (a node up all day with nothing on it waits for no job), else
--   `idle_between_jobs` and `unobserved`; serverless `unobserved` → `unobserved`;
-- * `storage_lingering` → `storage_lingering`; a network volume's lingering share
--   (marts.network_volume_lingering) → `network_volume_unused`;
-- * serverless `idle` and `rounding` → `serverless_idle`; `cold_start` → `serverless_cold_start`;
-- * what a resource-day's bill holds beyond its segments (a missing rate's compute, a bill
--   line's own rounding) → `unreconciled`, 0 seconds: not known to be work, so held here and
--   the tie-out (waste + work = billed_amount) stays exact.
-- Work, not here: `busy`, `execution`, `storage_running`, a network volume's attached share.
-- Owners (namespace, owner_kind, owner_name, team; owner_kind/owner_name from
-- intermediate.int_k8s__pod_owners, NULL where no KEDA object owns the pod):
-- * a tail: the session's last pod (intermediate.int_resource__tail_model);
-- * a startup segment: the pods starting in it, by GPUs; node boot with no pod scheduled: none;
-- * an idle gap: the owners of the workloads that ended last before it and of those scheduled
--   first after it, in the same compute session; one owner takes it whole, different owners
--   share it by their GPU-seconds on the resource that day; a gap with a side missing (before
--   the session's first pod) or whose owners held no GPU that day: none;
-- * everything else (unobserved, storage, network volumes, serverless, unreconciled): none.
-- What no owner explains is an explicit row: team `__unattributed__`, NULL owner columns. A pod
-- with no team label has team `__unallocated__` (as marts.allocation).
-- Exact decimals: a segment's shares are cut as decimals and what the cut lost goes to its
-- largest share (milliseconds likewise, in integers), so the shares add up to the segment.
-- grain: one row per (resource_id, day, cause, namespace, owner_kind, owner_name, team): every
-- billed second that is not work, and its money, by cause and by the owner it belongs to.
-- Causes and owners of instance compute: intermediate.int_resource__segment_owners (the rules,
-- one place for this mart and marts.allocation); of a startup segment, the part a pod present
-- spent in runs its startup probe killed (lastState.terminated before it first became Ready)
-- is probe_restarts. The rest (docs/design.md, "Waste"):
-- * `storage_lingering` → `storage_lingering`; a network volume's lingering share
--   (marts.network_volume_lingering) → `network_volume_unused`;
-- * serverless `idle` and `rounding` → `serverless_idle`; `cold_start` → `serverless_cold_start`;
--   serverless `unobserved` → `unobserved`;
-- * what a resource-day's bill holds beyond its segments (a missing rate's compute, a bill
--   line's own rounding) → `unreconciled`, 0 seconds: not known to be work, so held here and
--   the tie-out (waste + work = billed_amount) stays exact.
-- Work, not here: `busy`, `execution`, `storage_running`, a network volume's attached share.
-- These have no owner. What no owner explains is an explicit row: team `__unattributed__`, NULL
-- owner columns.
-- Exact decimals: a segment's shares are cut as decimals and what the cut lost goes to its
-- largest share (milliseconds likewise, in integers), so the shares add up to the segment.
with segments as (
    select * from intermediate.int_resource__instance_segments
),

segment_owners as (
    select * from intermediate.int_resource__segment_owners
),

workloads as (
    select * from intermediate.int_resource__workloads
),

pod_versions as (
    select * from staging.stg_k8s__pods
),

network_volume_lingering as (
    select * from marts.network_volume_lingering
),

-- read twice below, so named there directly (marts.billed_segments): DuckDB would
-- materialise an import CTE read twice
days as (
    select cfg('day_from')::date as lo, cfg('day_to')::date as hi
),

owned as (
    select o.*, g.ms, g.amount_usd as amount,
           sum(o.weight) over (partition by o.resource_id, o.seg_start) as total
    from segment_owners o
    cross join days
    join segments g using (resource_id, seg_start)
    where o.day between days.lo and days.hi
),

-- runs of a pod's main container its startup probe killed before it first became Ready
killed_runs as (
    select w.resource_id,
           v.main_status.lastState.terminated.startedAt as run_start,
           v.main_status.lastState.terminated.finishedAt as run_end
    from pod_versions v
    join workloads w on w.cluster is not distinct from v.cluster and w.pod_uid = v.pod_uid
    where v.main_status.lastState.terminated.finishedAt is not null
      and v.startup_period_seconds is not null
      and v.main_status.lastState.terminated.finishedAt <= coalesce(w.ready_at, w.window_end_at)
    group by all
),

-- a startup segment's milliseconds inside killed runs (runs of one resource merged first, so
-- two pods' overlapping runs count once)
probe_ms as (
    select o.resource_id, o.seg_start,
           sum(greatest(0, epoch_ms(least(k.run_end, o.seg_end)) - epoch_ms(greatest(k.run_start, o.seg_start))))
               as ms
    from (select distinct resource_id, seg_start, seg_end from owned where category = 'startup') o
    join (select resource_id, min(run_start) as run_start, max(run_end) as run_end
          from (select *, sum(new_island) over (partition by resource_id order by run_start, run_end) as island
                from (select *, case when run_start <= max(run_end) over (partition by resource_id order by run_start, run_end
                                                                          rows between unbounded preceding and 1 preceding)
                                     then 0 else 1 end as new_island
                      from killed_runs))
          group by resource_id, island) k
      on k.resource_id = o.resource_id and k.run_start < o.seg_end and k.run_end > o.seg_start
    group by all
),

cut as (
    -- a segment with owners: each its share; without: one unattributed piece
    select o.resource_id, o.day, o.seg_start, o.category, o.cause, o.ms as seg_ms, o.amount as seg_amount,
           o.namespace, o.owner_kind, o.owner_name, coalesce(o.team, '__unattributed__') as team,
           cast(floor(o.ms * coalesce(o.weight / o.total, 1)) as bigint) as ms,
           cast(o.amount * coalesce(o.weight / o.total, 1) as decimal(38, 12)) as amount
    from owned o
),

owner_pieces as (
    select resource_id, day, seg_start, category, cause, namespace, owner_kind, owner_name, team,
           ms + case when row_number() over largest = 1 then seg_ms - sum(ms) over seg else 0 end as ms,
           amount + case when row_number() over largest = 1 then seg_amount - sum(amount) over seg else 0 end
               as amount,
           seg_ms
    from cut
    window seg as (partition by resource_id, seg_start),
           largest as (partition by resource_id, seg_start
                       order by amount desc, ms desc, team, namespace, owner_kind, owner_name)
),

-- each owner's piece of a startup segment split by the segment's share spent in killed runs
instance_pieces as (
    select p.resource_id, p.day, p.category, x.cause, p.namespace, p.owner_kind, p.owner_name, p.team,
           x.ms, x.amount
    from (select p.*, coalesce(cast(floor(p.ms * k.ms / p.seg_ms) as bigint), 0) as probe_ms,
                 coalesce(cast(p.amount * k.ms / p.seg_ms as decimal(38, 12)), 0) as probe_amount
          from owner_pieces p
          left join probe_ms k on k.resource_id = p.resource_id and k.seg_start = p.seg_start
                              and p.category = 'startup' and p.seg_ms > 0) p,
         unnest([{'cause': 'probe_restarts', 'ms': p.probe_ms, 'amount': p.probe_amount},
                 {'cause': p.cause, 'ms': p.ms - p.probe_ms, 'amount': p.amount - p.probe_amount}]) as u(x)
),

others as (
    -- instance disk and serverless categories: no owner
    select b.resource_id, b.resource_kind, b.day,
           case when b.category = 'storage_lingering' then 'storage_lingering'
                when b.category in ('idle', 'rounding') then 'serverless_idle'
                when b.category = 'cold_start' then 'serverless_cold_start'
                else 'unobserved' end as cause,
           b.seconds, b.amount
    from marts.billed_segments b, days
    where b.day between days.lo and days.hi
      and (b.category in ('storage_lingering', 'idle', 'rounding', 'cold_start')
           or (b.resource_kind = 'serverless' and b.category = 'unobserved'))
),

network_volume as (
    select volume_id as resource_id, 'network_volume' as resource_kind, day,
           'network_volume_unused' as cause, lingering_seconds as seconds,
           cast(lingering_amount as decimal(38, 12)) as amount
    from network_volume_lingering, days
    where day between days.lo and days.hi
),

-- a resource-day's bill beyond its segments
unreconciled as (
    select r.resource_id, r.resource_kind, r.day, 'unreconciled' as cause,
           0.000::decimal(18, 3) as seconds,
           r.billed_amount - coalesce(s.amount, 0) as amount
    from marts.resource_day r
    cross join days
    left join (select resource_id, day, sum(amount) as amount from marts.billed_segments group by all) s
      using (resource_id, day)
    where r.day between days.lo and days.hi and r.billed_amount - coalesce(s.amount, 0) <> 0
),

unowned as (
    select * from others
    union all select * from network_volume
    union all select * from unreconciled
),

unioned as (
    select resource_id, 'instance' as resource_kind, day, cause, namespace, owner_kind, owner_name, team,
           ms * 0.001::decimal(18, 3) as seconds, amount
    from instance_pieces
    union all
    select resource_id, resource_kind, day, cause, null, null, null, '__unattributed__', seconds, amount
    from unowned
),

final as (
    select resource_id, resource_kind, day, cause, namespace, owner_kind, owner_name, team,
           cast(sum(seconds) as decimal(18, 3)) as seconds,
           cast(sum(amount) as decimal(38, 12)) as amount
    from unioned
    group by resource_id, resource_kind, day, cause, namespace, owner_kind, owner_name, team
    having sum(seconds) <> 0 or sum(amount) <> 0
)

select * from final
where day between cfg('day_from')::date and cfg('day_to')::date
order by resource_id, day, cause, team, namespace, owner_kind, owner_name
