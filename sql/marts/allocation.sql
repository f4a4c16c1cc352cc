-- grain: one row per (day, team, namespace, workload, resource_id, category).
-- Instance compute is split among the GPU workloads active in each elementary segment by the
-- share of the node's GPUs each held (busy: ready and running; startup: scheduled, not ready);
-- the GPUs nobody held, node boot, idle gaps and tails are `__idle__`; `unobserved` compute is
-- `__unallocated__`. Storage follows the same rule per day (running disk → the day's workloads
-- by their compute share; lingering disk and network volumes → `__idle__`). Serverless
-- execution goes to the endpoint; its cold start, idle and rounding to `__idle__`.
-- The amounts of a day add up to the bill of that day (checks/allocation_ties_to_bill).
with segments as (
    select * from intermediate.int_resource__instance_segments
),

workloads as (
    select w.*, split_part(w.pod_name, '-', 1) || coalesce('-' || nullif(split_part(w.pod_name, '-', 2), ''), '')
               as workload
    from intermediate.int_resource__workloads w
),

capacity as (
    select resource_id, max(gpu_capacity) as gpus
    from staging.stg_k8s__nodes n
    join intermediate.int_k8s__node_resources r using (cluster, node_name)
    group by all
),

holders as (
    select
        g.resource_id, g.session_id, g.seg_start, g.category, w.team, w.namespace, w.workload,
        w.gpus
    from segments g
    join workloads w
      on w.resource_id = g.resource_id
     and ((g.category = 'busy' and w.ready_at <= g.seg_start and w.window_end_at >= g.seg_end)
       or (g.category = 'startup' and w.scheduled_at <= g.seg_start
           and coalesce(w.ready_at, w.window_end_at) >= g.seg_end))
),

shares as (
    select h.*, greatest(coalesce(c.gpus, 0), sum(h.gpus) over (partition by h.resource_id, h.seg_start))
               as denominator
    from holders h
    left join capacity c using (resource_id)
),

allocated as (
    select s.resource_id, g.day, s.category, coalesce(s.team, '__unlabelled__') as team, s.namespace,
           s.workload,
           g.ms * s.gpus / s.denominator as ms,
           cast(g.amount_usd * s.gpus / s.denominator as decimal(38, 12)) as amount,
           cast(g.expected_usd * s.gpus / s.denominator as decimal(38, 12)) as expected_amount
    from shares s
    join segments g using (resource_id, seg_start)
),

instance_rest as (
    select g.resource_id, g.day, g.category,
           case when g.category = 'unobserved' then '__unallocated__' else '__idle__' end as team,
           null as namespace, null as workload,
           g.ms - coalesce(sum(a.ms), 0) as ms,
           g.amount_usd - coalesce(sum(a.amount), 0) as amount,
           g.expected_usd - coalesce(sum(a.expected_amount), 0) as expected_amount
    from segments g
    left join (select s.resource_id, s.seg_start, g2.ms * s.gpus / s.denominator as ms,
                      cast(g2.amount_usd * s.gpus / s.denominator as decimal(38, 12)) as amount,
                      cast(g2.expected_usd * s.gpus / s.denominator as decimal(38, 12)) as expected_amount
               from shares s join segments g2 using (resource_id, seg_start)) a
      on a.resource_id = g.resource_id and a.seg_start = g.seg_start
    group by g.resource_id, g.seg_start, g.day, g.category, g.ms, g.amount_usd, g.expected_usd
),

compute_share as (
    select resource_id, day, team, namespace, workload,
           sum(amount) / sum(sum(amount)) over (partition by resource_id, day) as share
    from allocated
    group by resource_id, day, team, namespace, workload
),

storage as (
    select b.resource_id, b.day, b.category, coalesce(c.team, '__idle__') as team, c.namespace,
           c.workload,
           b.seconds * 1000 * coalesce(c.share, 1) as ms,
           cast(b.amount * coalesce(c.share, 1) as decimal(38, 12)) as amount,
           cast(b.expected_amount * coalesce(c.share, 1) as decimal(38, 12)) as expected_amount
    from marts.billed_segments b
    left join compute_share c
      on c.resource_id = b.resource_id and c.day = b.day and b.category = 'storage_running'
    where b.category in ('storage_running', 'storage_lingering', 'network_volume')
),

serverless as (
    select resource_id, day, category,
           case when category = 'execution' then '__serverless__'
                when category = 'unobserved' then '__unallocated__' else '__idle__' end as team,
           case when category = 'execution' then 'serverless' end as namespace,
           case when category = 'execution' then resource_id end as workload,
           seconds * 1000 as ms, amount, expected_amount
    from marts.billed_segments
    where resource_kind = 'serverless'
),

unioned as (
    select resource_id, day, category, team, namespace, workload, ms, amount, expected_amount from allocated
    union all select * from instance_rest where ms <> 0 or amount <> 0
    union all select * from storage
    union all select * from serverless
),

final as (
    select day, team, namespace, workload, resource_id, category,
           cast(round(sum(ms)) as bigint) * 0.001::decimal(18, 3) as seconds,
           cast(sum(amount) as decimal(38, 12)) as amount,
           cast(sum(expected_amount) as decimal(38, 12)) as expected_amount
    from unioned
    group by day, team, namespace, workload, resource_id, category
)

select * from final
where day between cfg('day_from')::date and cfg('day_to')::date
order by day, team, namespace nulls first, workload nulls first, resource_id, category
