-- grain: one row per serverless endpoint and day: billed worker ms (amount ÷ configured
-- per-second rate, derived) split into cold_start, execution, idle and rounding.
-- Idle is what remains of the billed time once cold start, execution and rounding are taken out;
-- it is only claimed when job/worker observations exist that day, otherwise the day is unobserved.
with serverless_billing as (
    select * from staging.stg_runpod__serverless_billing
),

rates as (
    select * from config.rates
),

worker_sessions as (
    select * from intermediate.int_serverless__worker_sessions
),

billed as (
    select
        b.endpoint_id,
        cast(date_trunc('day', b.bucket_start) as date) as day,
        sum(b.worker_amount_usd) as worker_usd,
        sum(b.total_amount_usd) as total_usd,
        any_value(r.usd) as rate_per_second,
        sum(case when r.usd > 0 then cast(round(b.worker_amount_usd * 1000 / r.usd) as bigint) end) as billed_ms,
        max(b.bucket_end) as last_bucket_end
    from serverless_billing b
    left join rates r on r.rate_kind = 'serverless_per_second' and r.match_key = b.endpoint_id
    group by all
),

observed as (
    select endpoint_id, day,
           sum(cold_start_ms) as cold_ms, sum(execution_ms) as exec_ms, sum(between_ms) as between_ms,
           sum(rounding_est_ms) as rounding_ms, count(*) as worker_sessions,
           sum(idle_timeout_ms) as timeout_ms,
           max(last_done_ms) as last_done_ms
    from worker_sessions
    group by all
),

joined as (
    select
        coalesce(b.endpoint_id, o.endpoint_id) as endpoint_id,
        coalesce(b.day, o.day) as day,
        b.worker_usd, b.total_usd, b.rate_per_second, b.billed_ms,
        o.endpoint_id is not null as observed,
        coalesce(o.cold_ms, 0) as cold_ms, coalesce(o.exec_ms, 0) as exec_ms,
        coalesce(o.between_ms, 0) as between_ms, coalesce(o.rounding_ms, 0) as rounding_ms,
        coalesce(o.worker_sessions, 0) as worker_sessions, coalesce(o.timeout_ms, 0) as timeout_ms,
        o.last_done_ms
    from billed b
    full join observed o on o.endpoint_id = b.endpoint_id and o.day = b.day
),

split as (
    select
        *,
        case when observed then least(exec_ms, coalesce(billed_ms, 0)) else 0 end as execution_ms,
        case when observed then least(cold_ms, greatest(coalesce(billed_ms, 0) - exec_ms, 0)) else 0 end
            as cold_start_ms,
        case when observed then least(rounding_ms, greatest(coalesce(billed_ms, 0) - exec_ms - cold_ms, 0))
             else 0 end as rounding_split_ms
    from joined
),

final as (
    select
        endpoint_id, day, worker_usd, total_usd, rate_per_second, billed_ms, observed,
        cold_start_ms, execution_ms, rounding_split_ms as rounding_ms,
        case when observed then greatest(coalesce(billed_ms, 0) - execution_ms - cold_start_ms - rounding_split_ms, 0)
             else 0 end as idle_ms,
        case when not observed then coalesce(billed_ms, 0) else 0 end as unobserved_ms,
        between_ms + timeout_ms as expected_idle_ms,
        worker_sessions,
        exec_ms + cold_ms - coalesce(billed_ms, 0) as observed_exceeds_billed_ms,
        case when last_done_ms is not null then make_timestamp(last_done_ms * 1000)::timestamptz end
            as last_request_done_at
    from split
)

select * from final
