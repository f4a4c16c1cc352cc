-- grain: one row per billed resource and bucket (Runpod v2 pods, serverless, network volumes):
-- every pull of it is a version; the bucket is `restated` when a later pull changed its amount,
-- `provisional` when the latest pull came before the bucket ended + settlement_lag_hours (or
-- while it was still in progress), else `settled`. Saved files with no pull time are `settled`.
with bill_lines as (
    select * from staging.stg_runpod__bill_lines
),

lines as (
    select resource_kind, resource_id, start_time as bucket_start, bucket_end, total_amount as amount, pulled_at
    from bill_lines
    where source in ('v2_pods', 'v2_serverless', 'v2_network_volumes')
),

-- One version per pull time. Several lines of one bucket with the same pulledAt (a duplicated
-- hour, two files of one pull, endTimes spelled or cut differently) are one version: the largest
-- amount and the latest end. So pulled_at is unique within each bucket's versions and every
-- window below orders them totally; with ties, which line came first or last was whichever
-- the sort met first, and bill_state, first_amount and the provisional counts changed between
-- runs of the same files.
versions as (
    select resource_kind, resource_id, bucket_start, pulled_at,
           max(bucket_end) as bucket_end, max(amount) as amount
    from lines
    where bucket_start is not null and resource_id is not null
    group by resource_kind, resource_id, bucket_start, pulled_at
),

ordered as (
    select
        *,
        lag(amount) over w as previous_amount,
        row_number() over (partition by resource_kind, resource_id, bucket_start
                           order by pulled_at desc nulls last) as recency,
        count(*) over (partition by resource_kind, resource_id, bucket_start) as pulls,
        first_value(amount) over w as first_amount
    from versions
    window w as (partition by resource_kind, resource_id, bucket_start order by pulled_at nulls first)
),

changes as (
    select resource_kind, resource_id, bucket_start,
           count(*) filter (where previous_amount is not null
                              and previous_amount <> amount) as changes
    from ordered
    group by all
),

final as (
    select
        o.resource_kind, o.resource_id, o.bucket_start, o.bucket_end,
        cast(date_trunc('day', o.bucket_start) as date) as day,
        o.pulls, o.pulled_at as last_pulled_at, o.first_amount, o.amount as latest_amount,
        o.amount - o.first_amount as restated_change,
        case when c.changes > 0 then 'restated'
             when o.pulled_at is null then 'settled'
             when o.pulled_at < o.bucket_end + to_hours(cfg_int('settlement_lag_hours')) then 'provisional'
             else 'settled' end as state
    from ordered o
    join changes c using (resource_kind, resource_id, bucket_start)
    where o.recency = 1
)

select * from final
