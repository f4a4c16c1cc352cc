-- grain: one row per finding about money committed up front or held: SAVINGS_PLAN_UNUSED,
-- SAVINGS_PLAN_EXPIRING, BALANCE_BELOW_ONE_HOUR. Columns as marts.findings before ids.
with days as (
    select distinct cast(date_trunc('day', bucket_start) as date) as day
    from intermediate.int_billing__instance_lines
),

plan_days as (
    -- the GPU-milliseconds the plan's pods ran that day, at most the plan's GPUs × the day
    select p.*, d.day,
           least((select coalesce(sum(b.compute_ms * coalesce(r.gpu_count, 1)), 0)
                    from intermediate.int_runpod__pod_buckets b
                    left join intermediate.int_runpod__pod_rates r using (pod_id)
                   where b.plan_id = p.plan_id and cast(date_trunc('day', b.bucket_start) as date) = d.day),
                 p.gpu_count * 86400000) as used_gpu_ms,
           p.gpu_count * 86400000 as capacity_gpu_ms,
           cast(p.upfront_usd / (p.end_day - p.start_day) as decimal(38, 12)) as day_share
    from config.savings_plans p
    join days d on d.day >= p.start_day and d.day < p.end_day
),

unused as (
    -- the upfront buys the plan's GPUs for every second of its term: what of a day's share no
    -- pod used (its GPU-seconds, as a share of the plan's GPUs × 86,400 s) bought nothing;
    -- raised beyond savings_plan_unused_tolerance_seconds of the plan's GPUs
    select 'SAVINGS_PLAN_UNUSED' as code, 'warning' as severity, 'plan:' || plan_id as resource_id, day,
           day::timestamptz as window_start, day::timestamptz + interval 1 day as window_end,
           (capacity_gpu_ms - used_gpu_ms) // gpu_count as ms,
           cast(day_share * (capacity_gpu_ms - used_gpu_ms) / capacity_gpu_ms as decimal(38, 12)) as amount_at_stake,
           'Savings plan ' || plan_id || ' (' || gpu_count || ' × ' || gpu_type || ', $' || round(upfront_usd, 2)
               || ' paid up front for ' || start_day || ' to ' || end_day || ') '
               || case when used_gpu_ms = 0 then 'covered no running pod on ' || day
                       else 'covered running pods for ' || round(used_gpu_ms / 3600000, 2) || ' of its '
                            || (gpu_count * 24) || ' GPU-hours on ' || day end
               || ': ' || round((capacity_gpu_ms - used_gpu_ms) / 3600000, 2) || ' GPU-hours, $'
               || round(day_share * (capacity_gpu_ms - used_gpu_ms) / capacity_gpu_ms, 2)
               || ' of the day''s $' || round(day_share, 2) || ', bought nothing. A plan applies to the '
               || 'next deployment of the same GPU type after a stop.'
               as message
    from plan_days
    where (capacity_gpu_ms - used_gpu_ms) // gpu_count > cfg_int('savings_plan_unused_tolerance_seconds') * 1000
),

expiring as (
    select 'SAVINGS_PLAN_EXPIRING', 'info', 'plan:' || p.plan_id, d.day,
           d.day::timestamptz, p.end_day::timestamptz, 0, cast(0 as decimal(38, 12)),
           'Savings plan ' || p.plan_id || ' (' || p.gpu_count || ' × ' || p.gpu_type || ') expires on ' || p.end_day
               || ', ' || (p.end_day - d.day) || ' day(s) after ' || d.day
               || ' (savings_plan_expiry_warning_days = ' || cfg_int('savings_plan_expiry_warning_days')
               || '); after that its pods bill at the on-demand rate.'
    from config.savings_plans p
    join days d on d.day < p.end_day and p.end_day - d.day <= cfg_int('savings_plan_expiry_warning_days')
        and d.day >= p.start_day
),

balance as (
    select 'BALANCE_BELOW_ONE_HOUR', 'error', 'account', cast(date_trunc('day', observed_at) as date),
           observed_at, observed_at + interval 1 hour, 3600000,
           cast(spend_per_hour - balance as decimal(38, 12)),
           'At ' || strftime(observed_at, '%Y-%m-%dT%H:%M:%SZ') || ' the account balance $' || round(balance, 2)
               || ' could not cover one hour of the current spend ($' || round(spend_per_hour, 2)
               || '/h); on-demand deploys need at least one hour of balance.'
    from staging.stg_runpod__balance
    where balance < spend_per_hour
    qualify row_number() over (partition by cast(date_trunc('day', observed_at) as date)
                               order by balance - spend_per_hour, observed_at, balance) = 1
)

select * from unused
union all select * from expiring
union all select * from balance
