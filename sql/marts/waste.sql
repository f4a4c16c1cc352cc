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
-- * a startup segment: the pods starting in it, by the GPU fractions they hold (slots,
--   intermediate.int_resource__workloads); node boot with no pod scheduled: none;
-- * an idle gap: the owners of the workloads that ended last before it and of those scheduled
--   first after it, in the same compute session; one owner takes it whole, different owners
--   share it by their GPU-seconds (fractions of GPUs held × seconds) on the resource that day;
--   a gap with a side missing (before the session's first pod) or whose owners held no GPU
--   that day: none;
-- * everything else (unobserved, storage, network volumes, serverless, unreconciled): none.
-- What no owner explains is an explicit row: team `__unattributed__`, NULL owner columns. A pod
-- with no team label has team `__unallocated__` (as marts.allocation).
-- Exact decimals: a segment's shares are cut as decimals and what the cut lost goes to its
-- largest share (milliseconds likewise, in integers), so the shares add up to the segment.
with segments as (
    select * from intermediate.int_resource__instance_segments
),

workloads as (
    select * from intermediate.int_resource__workloads
),

pod_owners as (
    select * from intermediate.int_k8s__pod_owners
),

tail_model as (
    select * from intermediate.int_resource__tail_model
),

compute_sessions as (
    select * from intermediate.int_resource__compute_sessions
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
    select w.resource_id, w.gpu_slots as gpus, w.scheduled_at, w.ready_at, w.window_end_at, w.namespace,
           o.owner_kind, o.owner_name, coalesce(w.team, '__unallocated__') as team
    from workloads w
    left join pod_owners o on o.cluster is not distinct from w.cluster and o.pod_uid = w.pod_uid
),

waste_segments as (
    select g.resource_id, g.session_id, g.day, g.seg_start, g.seg_end, g.category, g.ms,
           g.amount_usd as amount, s.start_at as session_start, s.end_at as session_end
    from segments g
    cross join days
    join compute_sessions s using (session_id)
    where g.day between days.lo and days.hi and g.category in ('startup', 'idle_gap', 'tail', 'unobserved')
),

-- each owner's GPU-milliseconds on a resource-day: the weights of a gap between owners
gpu_ms as (
    select o.resource_id, d.day, o.namespace, o.owner_kind, o.owner_name, o.team,
           sum(o.gpus * (epoch_ms(least(o.window_end_at, d.day::timestamptz + interval 1 day))
                         - epoch_ms(greatest(o.scheduled_at, d.day::timestamptz)))) as gpu_ms
    from owned o
    join (select distinct resource_id, day from waste_segments) d
      on d.resource_id = o.resource_id
     and o.scheduled_at < d.day::timestamptz + interval 1 day and o.window_end_at > d.day::timestamptz
    group by all
),

tail_owners as (
    select g.resource_id, g.seg_start, t.namespace, t.owner_kind, t.owner_name,
           coalesce(t.team, '__unallocated__') as team, 1.0 as weight
    from waste_segments g
    join tail_model t using (session_id)
    where g.category = 'tail'
),

startup_owners as (
    select g.resource_id, g.seg_start, o.namespace, o.owner_kind, o.owner_name, o.team,
           sum(o.gpus) as weight
    from waste_segments g
    join owned o
      on o.resource_id = g.resource_id and o.scheduled_at <= g.seg_start
     and coalesce(o.ready_at, o.window_end_at) >= g.seg_end
    where g.category = 'startup'
    group by all
),

gap_sides as (
    -- the workloads that ended last before the gap and those scheduled first after it, in its session
    select g.resource_id, g.seg_start, g.day, 'before' as side, o.namespace, o.owner_kind, o.owner_name, o.team
    from waste_segments g
    join owned o
      on o.resource_id = g.resource_id and o.window_end_at <= g.seg_start and o.window_end_at >= g.session_start
    where g.category = 'idle_gap'
    qualify o.window_end_at = max(o.window_end_at) over (partition by g.resource_id, g.seg_start)
    union all
    select g.resource_id, g.seg_start, g.day, 'after', o.namespace, o.owner_kind, o.owner_name, o.team
    from waste_segments g
    join owned o
      on o.resource_id = g.resource_id and o.scheduled_at >= g.seg_end and o.scheduled_at < g.session_end
    where g.category = 'idle_gap'
    qualify o.scheduled_at = min(o.scheduled_at) over (partition by g.resource_id, g.seg_start)
),

gap_complete as (
    select resource_id, seg_start from gap_sides group by all having count(distinct side) = 2
),

gap_owners_all as (
    select resource_id, seg_start, day, namespace, owner_kind, owner_name, team,
           count(*) over (partition by resource_id, seg_start) as owners
    from (select distinct resource_id, seg_start, day, namespace, owner_kind, owner_name, team
          from gap_sides semi join gap_complete using (resource_id, seg_start))
),

gap_owners as (
    select a.resource_id, a.seg_start, a.namespace, a.owner_kind, a.owner_name, a.team,
           case when a.owners = 1 then 1.0 else coalesce(m.gpu_ms, 0) end as weight
    from gap_owners_all a
    left join gpu_ms m
      on m.resource_id = a.resource_id and m.day = a.day and m.namespace = a.namespace
     and m.owner_kind is not distinct from a.owner_kind and m.owner_name is not distinct from a.owner_name
     and m.team = a.team
),

candidates as (
    select resource_id, seg_start, namespace, owner_kind, owner_name, team, weight from tail_owners
    union all select * from startup_owners
    union all select * from gap_owners
),

weighted as (
    select c.*, sum(c.weight) over (partition by c.resource_id, c.seg_start) as total
    from candidates c
    where c.weight > 0
),

instance_cause as (
    select g.*,
           case g.category
               when 'tail' then case t.scaler when 'scale_to_zero' then 'keda_cooldown'
                                              when 'hpa_scale_in' then 'hpa_scale_down'
                                              else 'tail_after_exit' end
               when 'startup' then 'startup'
               when 'idle_gap' then
                   case when g.worked_that_day then 'idle_between_jobs'
                        else 'bill_without_workload' end
               when 'unobserved' then
                   case when g.worked_that_day then 'unobserved' else 'bill_without_workload' end
           end as cause
    from (select g.*, exists (select 1 from owned o
                              where o.resource_id = g.resource_id
                                and o.scheduled_at < g.day::timestamptz + interval 1 day
                                and o.window_end_at > g.day::timestamptz) as worked_that_day
          from waste_segments g) g
    left join tail_model t using (session_id)
),

cut as (
    -- a segment with owners: each its share; without: one unattributed piece
    select g.resource_id, g.day, g.seg_start, g.cause, g.ms as seg_ms, g.amount as seg_amount,
           w.namespace, w.owner_kind, w.owner_name, coalesce(w.team, '__unattributed__') as team,
           cast(floor(g.ms * coalesce(w.weight / w.total, 1)) as bigint) as ms,
           cast(g.amount * coalesce(w.weight / w.total, 1) as decimal(38, 12)) as amount
    from instance_cause g
    left join weighted w using (resource_id, seg_start)
),

instance_pieces as (
    select resource_id, day, cause, namespace, owner_kind, owner_name, team,
           ms + case when row_number() over largest = 1 then seg_ms - sum(ms) over seg else 0 end as ms,
           amount + case when row_number() over largest = 1 then seg_amount - sum(amount) over seg else 0 end
               as amount
    from cut
    window seg as (partition by resource_id, seg_start),
           largest as (partition by resource_id, seg_start
                       order by amount desc, ms desc, team, namespace, owner_kind, owner_name)
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
