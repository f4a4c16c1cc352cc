-- grain: one row per pull that changed a bill bucket: what it was, what it became, when.
with bill_lines as (
    select * from staging.stg_runpod__bill_lines
),

lines as (
    select resource_id, start_time as bucket_start, total_amount as amount, pulled_at, source_file
    from bill_lines
    where source in ('v2_pods', 'v2_serverless', 'v2_network_volumes') and has_pull_time
),

versions as (
    select resource_id, bucket_start, pulled_at, max(amount) as amount, min(source_file) as source_file
    from lines group by all
),

final as (
    select resource_id, bucket_start, cast(date_trunc('day', bucket_start) as date) as day,
           lag(pulled_at) over w as previous_pulled_at, pulled_at,
           lag(amount) over w as previous_amount, amount, amount - lag(amount) over w as change,
           source_file
    from versions
    window w as (partition by resource_id, bucket_start order by pulled_at)
    qualify lag(amount) over w is not null and lag(amount) over w <> amount
)

select * from final order by bucket_start, resource_id, pulled_at
