-- grain: one row per elementary segment of billed instance compute: between two consecutive
-- instants at which anything changes (session edges, node Ready, workload scheduled/ready/end,
-- bucket edges, which include UTC midnight). Each segment gets exactly one category (docs/design.md).
with sessions as (
    select * from intermediate.int_resource__session_context
),

workloads as (
    select * from intermediate.int_resource__workloads
),

buckets as (
    select * from intermediate.int_runpod__pod_buckets where compute_ms > 0
),

instants as (
    select resource_id, start_at as t from sessions
    union select resource_id, end_at from sessions
    union select resource_id, node_ready_at from sessions
    union select pod_id, bucket_start from buckets
    union select pod_id, bucket_end from buckets
    union select resource_id, scheduled_at from workloads
    union select resource_id, ready_at from workloads where ready_at is not null
    union select resource_id, window_end_at from workloads
),

segments as (
    select resource_id, t as seg_start, lead(t) over (partition by resource_id order by t) as seg_end
    from instants
),

in_session as (
    select g.resource_id, g.seg_start, g.seg_end, s.session_id, s.mapped, s.node_ready_at,
           s.last_finished_at, s.end_at as session_end_at
    from segments g
    join sessions s
      on s.resource_id = g.resource_id and g.seg_start >= s.start_at and g.seg_end <= s.end_at
    where g.seg_end > g.seg_start
),

flagged as (
    select
        g.resource_id, g.seg_start, g.seg_end, g.session_id, g.mapped, g.node_ready_at,
        g.last_finished_at,
        count(w.pod_uid) filter (where w.ready_at <= g.seg_start and w.window_end_at >= g.seg_end) as n_busy,
        count(w.pod_uid) filter (where w.scheduled_at <= g.seg_start
                                   and coalesce(w.ready_at, w.window_end_at) >= g.seg_end) as n_starting
    from in_session g
    left join workloads w
      on w.resource_id = g.resource_id and w.scheduled_at < g.seg_end and w.window_end_at > g.seg_start
    group by all
),

classified as (
    select
        *,
        case when not mapped then 'unobserved'
             when n_busy > 0 then 'busy'
             when n_starting > 0 or seg_end <= node_ready_at then 'startup'
             when last_finished_at is not null and seg_start >= last_finished_at then 'tail'
             else 'idle_gap' end as category
    from flagged
),

cut as (
    select
        c.resource_id,
        c.session_id,
        c.seg_start,
        c.seg_end,
        cast(date_trunc('day', c.seg_start) as date) as day,
        c.category,
        epoch_ms(c.seg_end) - epoch_ms(c.seg_start) as ms,
        cast(b.compute_usd * (epoch_ms(c.seg_end) - epoch_ms(c.seg_start)) / b.compute_ms
             as decimal(38, 12)) as amount_usd,
        cast(b.contracted_rate_per_hour * (epoch_ms(c.seg_end) - epoch_ms(c.seg_start)) / 3600000
             as decimal(38, 12)) as expected_usd,
        b.bucket_start,
        b.compute_usd
    from classified c
    join buckets b
      on b.pod_id = c.resource_id and c.seg_start >= b.bucket_start and c.seg_end <= b.bucket_end
),

-- a bucket's segments add up to its compute_usd exactly: what cutting it by milliseconds in
-- double lost (< 1e-9 USD) goes to its largest segment (a larger gap is left as it is: the
-- tie-out suite and marts.allocation's `unreconciled` row show it)
final as (
    select resource_id, session_id, seg_start, seg_end, day, category, ms,
           amount_usd + case
               when row_number() over bucket_largest = 1
                and abs(compute_usd - sum(amount_usd) over bucket) <= 0.000001
               then compute_usd - sum(amount_usd) over bucket else 0 end as amount_usd,
           expected_usd
    from cut
    window bucket as (partition by resource_id, bucket_start),
           bucket_largest as (partition by resource_id, bucket_start order by amount_usd desc, seg_start)
)

select * from final
