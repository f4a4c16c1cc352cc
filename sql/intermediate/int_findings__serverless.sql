-- grain: one row per serverless finding about worker time billed with no job to show for it.
-- Columns as marts.findings before ids, then idle_held_ms (the billed idle milliseconds the
-- finding holds: SERVERLESS_IDLE_EXCESS, sql/marts/findings.sql, claims only the excess beyond
-- them, so no second is money in two findings).
--
--   SERVERLESS_STUCK_WORKER, one row per worker (or job) and UTC day of its overrun:
--     * a worker of an endpoint with no active workers (workersMin = workersStandby = 0) that the
--       workers API still showed alive more than serverless_stuck_worker_tolerance_seconds after
--       its last job finished (or, with no job since, it last started) + the idle timeout: it did
--       not scale down. Money: [that allowed point, last seen) × the endpoint's per-second rate.
--       Its seconds are billed idle, which the finding holds.
--     * a job that executed longer than the endpoint's execution timeout + that tolerance: Runpod
--       stops the worker at the timeout, so what ran past it was billed while it should not have
--       run. Money: [execution start + timeout, completed) × rate. Execution seconds, not idle.
--   SERVERLESS_ALWAYS_ON, one row per endpoint and UTC day: serverless_always_on_hours or more
--     billed hours with no job queued, running or in its idle timeout (+ serverless_idle_tolerance
--     seconds) and no SERVERLESS_STUCK_WORKER window: active workers (workersMin or workersStandby
--     > 0) or a worker kept warm. Money: those hours' worker amounts, as billed.
with settings as (
    select
        cfg_int('serverless_stuck_worker_tolerance_seconds') * 1000 as stuck_tol_ms,
        cfg_int('serverless_execution_timeout_seconds') * 1000 as exec_timeout_default_ms,
        cfg_int('serverless_idle_timeout_seconds') * 1000 as idle_timeout_default_ms,
        cfg_int('serverless_idle_tolerance_seconds') * 1000 as idle_tol_ms,
        cfg_int('serverless_always_on_hours') as always_on_hours
),

rates as (
    -- as int_serverless__endpoint_days prices an endpoint's worker time
    select match_key as endpoint_id, any_value(usd) as rate_per_second
    from config.rates where rate_kind = 'serverless_per_second'
    group by all
),

endpoints as (
    select
        e.endpoint_id, e.workers_min, e.workers_standby,
        greatest(coalesce(e.workers_min, 0), coalesce(e.workers_standby, 0)) as active_workers,
        coalesce(e.idle_timeout_seconds * 1000, s.idle_timeout_default_ms) as idle_timeout_ms,
        e.execution_timeout_ms is not null as timeout_set,
        coalesce(e.execution_timeout_ms, s.exec_timeout_default_ms) as exec_timeout_ms
    from staging.stg_runpod__endpoints e
    cross join settings s
),

workers as (
    -- one row per worker: one seen both in responses that name its endpoint and in some that do
    -- not (tied to it by other inputs) is one worker, as last seen
    select endpoint_id, worker_id, max(last_seen_at) as last_seen_at,
           arg_max(last_started_at, last_seen_at) as last_started_at,
           arg_max(last_status, last_seen_at) as last_status
    from (
        select endpoint_id, worker_id, last_started_at, last_seen_at, last_status
        from staging.stg_runpod__workers where endpoint_id is not null
        union all
        select endpoint_id, worker_id, last_started_at, last_seen_at, last_status
        from staging.stg_runpod__worker_endpoints where endpoint_id is not null
    )
    group by endpoint_id, worker_id
),

-- a worker alive past the point its idle timeout allows: measured from the later of its last job
-- done and its last start (a later startedAt is a new life, which owes nothing to older jobs)
not_scaled_down as (
    select
        w.endpoint_id, w.worker_id, w.last_seen_at, w.last_status, w.last_started_at,
        make_timestamp(ws.last_done_ms * 1000)::timestamptz as last_done_at,
        coalesce(e.idle_timeout_ms, st.idle_timeout_default_ms) as idle_timeout_ms,
        greatest(make_timestamp(ws.last_done_ms * 1000)::timestamptz, w.last_started_at)
            + to_milliseconds(coalesce(e.idle_timeout_ms, st.idle_timeout_default_ms)) as allowed_at
    from workers w
    cross join settings st
    left join intermediate.int_serverless__worker_sessions ws using (endpoint_id, worker_id)
    left join endpoints e using (endpoint_id)
    -- an active worker is meant to stay up: its time is SERVERLESS_ALWAYS_ON's
    where coalesce(e.active_workers, 0) = 0
),

-- (materialized: two readers, and its second half scans every job)
stuck_windows as materialized (
    select
        endpoint_id, worker_id, allowed_at as from_at, last_seen_at as to_at, true as holds_idle,
        'Serverless worker ' || worker_id || ' of endpoint ' || endpoint_id || ' was still up at '
            || strftime(last_seen_at, '%Y-%m-%dT%H:%M:%SZ') || ' (workers API'
            || coalesce(', status ' || last_status, '') || ', started '
            || coalesce(strftime(last_started_at, '%Y-%m-%dT%H:%M:%SZ'), '?') || ') though '
            || case when last_done_at is null or last_done_at < last_started_at
                    then 'it ran no job since it started'
                    else 'its last job finished at ' || strftime(last_done_at, '%Y-%m-%dT%H:%M:%SZ') end
            || '; with idleTimeout ' || secs_text((idle_timeout_ms / 1000)::decimal(18, 3))
            || ' s it should have scaled down by ' || strftime(allowed_at, '%Y-%m-%dT%H:%M:%SZ') || ': '
            || secs_text(((epoch_ms(last_seen_at) - epoch_ms(allowed_at)) / 1000)::decimal(18, 3))
            || ' s up beyond it (serverless_stuck_worker_tolerance_seconds = '
            || (st.stuck_tol_ms // 1000) || ' s).' as evidence
    from not_scaled_down
    cross join settings st
    where epoch_ms(last_seen_at) - epoch_ms(allowed_at) > st.stuck_tol_ms
    union all
    select
        j.endpoint_id, j.worker_id,
        j.execution_started_at + to_milliseconds(coalesce(e.exec_timeout_ms, st.exec_timeout_default_ms)), j.completed_at, false,
        'Job ' || j.job_id || ' (' || coalesce(j.status, '?') || ') on serverless worker '
            || coalesce(j.worker_id, '?') || ' of endpoint ' || j.endpoint_id || ' executed for '
            || secs_text((j.execution_ms / 1000)::decimal(18, 3)) || ' s (executionTime), from '
            || strftime(j.execution_started_at, '%Y-%m-%dT%H:%M:%SZ') || ' to '
            || strftime(j.completed_at, '%Y-%m-%dT%H:%M:%SZ') || '; the execution timeout is '
            || secs_text((coalesce(e.exec_timeout_ms, st.exec_timeout_default_ms) / 1000)::decimal(18, 3)) || ' s ('
            || case when coalesce(e.timeout_set, false) then 'the endpoint''s'
                    else 'Runpod''s default, serverless_execution_timeout_seconds' end
            || '): ' || secs_text(((j.execution_ms - coalesce(e.exec_timeout_ms, st.exec_timeout_default_ms)) / 1000)::decimal(18, 3))
            || ' s billed past it (serverless_stuck_worker_tolerance_seconds = '
            || (st.stuck_tol_ms // 1000) || ' s).'
    from staging.stg_runpod__jobs j
    cross join settings st
    -- an endpoint no inventory snapshot shows has Runpod's default timeout
    left join endpoints e using (endpoint_id)
    where j.execution_ms - coalesce(e.exec_timeout_ms, st.exec_timeout_default_ms) > st.stuck_tol_ms
),

-- each window cut at UTC midnights: a finding is one day's money
stuck_pieces as (
    select
        w.*, d::date as day,
        greatest(w.from_at, d::timestamptz) as piece_from,
        least(w.to_at, d::timestamptz + interval 1 day) as piece_to
    from stuck_windows w,
         unnest(generate_series(cast(date_trunc('day', w.from_at) as date),
                                cast(date_trunc('day', w.to_at - interval 1 millisecond) as date),
                                interval 1 day)) as t(d)
),

stuck as (
    select
        'SERVERLESS_STUCK_WORKER' as code, 'warning' as severity, p.endpoint_id as resource_id, p.day,
        p.piece_from as window_start, p.piece_to as window_end,
        epoch_ms(p.piece_to) - epoch_ms(p.piece_from) as ms,
        cast(r.rate_per_second * (epoch_ms(p.piece_to) - epoch_ms(p.piece_from)) / 1000 as decimal(38, 12))
            as amount_at_stake,
        p.evidence || ' On ' || p.day || ': '
            || secs_text(((epoch_ms(p.piece_to) - epoch_ms(p.piece_from)) / 1000)::decimal(18, 3)) || ' s'
            || coalesce(' × $' || secs_text(r.rate_per_second) || '/s', ' (no rates.serverless_per_second for it)')
            || '.' as message,
        case when p.holds_idle then epoch_ms(p.piece_to) - epoch_ms(p.piece_from) else 0 end as idle_held_ms
    from stuck_pieces p
    left join rates r using (endpoint_id)
    where p.piece_to > p.piece_from
),

-- the hours some job touched: queued or running, then its idle timeout and the tolerance
job_hours as (
    select distinct s.endpoint_id, unnest(generate_series(s.from_hour, s.to_hour, interval 1 hour)) as hour
    from (
        select distinct
            j.endpoint_id,
            date_trunc('hour', least(j.submitted_at, j.execution_started_at)) as from_hour,
            date_trunc('hour', j.completed_at + to_milliseconds(coalesce(e.idle_timeout_ms, st.idle_timeout_default_ms)
                                                                + st.idle_tol_ms) - interval 1 millisecond) as to_hour
        from staging.stg_runpod__jobs j
        cross join settings st
        left join endpoints e using (endpoint_id)
    ) s
),

job_free_hours as (
    select
        b.endpoint_id, cast(date_trunc('day', b.bucket_start) as date) as day, b.bucket_start, b.bucket_end,
        b.worker_amount_usd,
        case when r.rate_per_second > 0
             then cast(round(b.worker_amount_usd * 1000 / r.rate_per_second) as bigint) end as billed_ms
    from staging.stg_runpod__serverless_billing b
    left join rates r using (endpoint_id)
    -- hour buckets only: a day bucket cannot tell an hour without jobs
    where b.worker_amount_usd > 0 and b.bucket_end - b.bucket_start = interval 1 hour
      and not exists (select 1 from job_hours h where h.endpoint_id = b.endpoint_id and h.hour = b.bucket_start)
      -- a worker that did not scale down: SERVERLESS_STUCK_WORKER holds its hours
      and not exists (select 1 from stuck_windows w where w.endpoint_id = b.endpoint_id and w.holds_idle
                      and w.from_at < b.bucket_end and w.to_at > b.bucket_start)
),

always_on_days as (
    select endpoint_id, day, count(*) as hours, min(bucket_start) as first_hour, max(bucket_end) as last_hour_end,
           sum(worker_amount_usd) as amount, sum(billed_ms) as billed_ms,
           string_agg(strftime(bucket_start, '%H'), ', ' order by bucket_start) as hour_list
    from job_free_hours
    group by all
),

seen as (
    -- workers the workers API showed on the endpoint that day: the evidence of who was kept up
    select endpoint_id, cast(date_trunc('day', last_seen_at) as date) as day,
           string_agg(worker_id || coalesce(' (' || last_status || ')', ''), ', ' order by worker_id) as workers
    from workers
    group by all
),

always_on as (
    select
        'SERVERLESS_ALWAYS_ON', 'warning', a.endpoint_id, a.day,
        a.first_hour, a.last_hour_end,
        coalesce(a.billed_ms, a.hours * 3600000),
        a.amount,
        'Serverless endpoint ' || a.endpoint_id || ' billed $' || round(a.amount, 6) || ' of worker time in '
            || a.hours || ' hour(s) of ' || a.day || ' (UTC hours ' || a.hour_list || ')'
            || coalesce(' (' || secs_text((a.billed_ms / 1000)::decimal(18, 3)) || ' worker-s)', '')
            || ' with no job queued, running or in its idle timeout; '
            || case when e.active_workers > 0
                    then 'workersMin = ' || coalesce(e.workers_min, 0)
                         || coalesce(', workersStandby = ' || e.workers_standby, '')
                         || ': active workers bill continuously, jobs or not'
                    when e.endpoint_id is null then 'no inventory snapshot shows its settings: a worker kept warm'
                    else 'workersMin = 0: a flex worker kept warm instead of scaling to zero' end
            || coalesce('; workers seen that day: ' || s.workers, '')
            || '. Threshold serverless_always_on_hours = ' || st.always_on_hours || '.',
        coalesce(a.billed_ms, 0)
    from always_on_days a
    cross join settings st
    left join endpoints e using (endpoint_id)
    left join seen s using (endpoint_id, day)
    where a.hours >= st.always_on_hours
)

select * from stuck
union all select * from always_on
