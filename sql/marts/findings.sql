-- grain: one row per finding. finding_id is a hash of what identifies it, so it is stable across
-- reruns. Every finding names the threshold it crossed and the evidence, in words finance reads.
-- The lifecycle codes are here; workload, bill and commitment codes come from intermediate.int_findings__*.
-- One wasted second is money in one finding: BILLED_AFTER_EXIT stops where the node's observed
-- life ends (BILLED_EXCEEDS_RUNTIME takes the rest); UNSCHEDULABLE_GPU carries no money (the
-- idle nodes' idle_gap holds it); RATE_MISMATCH is price, not time.
with settings as (
    select
        coalesce((select max(cooldown_seconds) from staging.stg_k8s__scaled_objects),
                 cfg_int('keda_cooldown_seconds')) as cooldown_s,
        cfg_int('scale_down_grace_seconds') as grace_s,
        cfg_int('tail_tolerance_seconds') as tolerance_s,
        cfg_int('storage_lingering_age_seconds') as lingering_age_s,
        cfg_int('serverless_idle_tolerance_seconds') as idle_tol_s,
        cfg_int('billed_without_activity_min_seconds') as bwa_min_s
),

last_task as (
    select w.resource_id, s.session_id, arg_max(w.namespace || '/' || w.pod_name, w.window_end_at) as last_pod,
           min(w.node_name) as node_name
    from intermediate.int_resource__workloads w
    join intermediate.int_resource__session_context s
      on s.resource_id = w.resource_id and w.window_end_at = s.last_finished_at
    group by all
),

after_exit as (
    select
        'BILLED_AFTER_EXIT' as code, 'warning' as severity, s.resource_id,
        cast(date_trunc('day', s.last_finished_at) as date) as day,
        s.last_finished_at + to_seconds(t.cooldown_s + t.grace_s + t.tolerance_s) as window_start,
        s.end_at as window_end,
        epoch_ms(s.end_at) - epoch_ms(s.last_finished_at) - (t.cooldown_s + t.grace_s + t.tolerance_s) * 1000 as ms,
        (select sum(cast(g.amount_usd * (epoch_ms(least(g.seg_end, s.end_at, s.covered_until + to_seconds(cfg_int('billed_exceeds_runtime_tolerance_seconds'))))
                     - epoch_ms(greatest(g.seg_start, s.last_finished_at + to_seconds(t.cooldown_s + t.grace_s + t.tolerance_s))))
                     / g.ms as decimal(38, 12)))
           from intermediate.int_resource__instance_segments g
          where g.session_id = s.session_id and g.category = 'tail'
            and g.seg_end > s.last_finished_at + to_seconds(t.cooldown_s + t.grace_s + t.tolerance_s)) as amount_at_stake,
        'Runpod pod ' || s.resource_id || ' (node ' || coalesce(l.node_name, '?') || ') kept billing compute for '
            || ((epoch_ms(s.end_at) - epoch_ms(s.last_finished_at)) // 1000) || ' s after its last task ('
            || coalesce(l.last_pod, '?') || ') finished at ' || strftime(s.last_finished_at, '%Y-%m-%dT%H:%M:%SZ')
            || '; compute stopped at ' || strftime(s.end_at, '%Y-%m-%dT%H:%M:%SZ') || '. Expected tail at most '
            || (t.cooldown_s + t.grace_s + t.tolerance_s) || ' s (KEDA cooldownPeriod ' || t.cooldown_s
            || ' s + scale_down_grace_seconds ' || t.grace_s || ' s + tail_tolerance_seconds ' || t.tolerance_s || ' s): '
            -- the finding's seconds, said in words (the table's seconds were not the message's)
            || (ms // 1000) || ' s billed beyond it.'
            as message
    from intermediate.int_resource__session_context s
    cross join settings t
    left join last_task l using (session_id)
    where s.mapped and s.workloads > 0 and s.last_finished_at < s.end_at
      and epoch_ms(s.end_at) - epoch_ms(s.last_finished_at) > (t.cooldown_s + t.grace_s + t.tolerance_s) * 1000
),

lingering as (
    select
        'STORAGE_LINGERING', 'warning', d.resource_id, d.day,
        d.day::timestamptz, d.day::timestamptz + interval 1 day,
        cast(d.lingering_storage_seconds * 1000 as bigint),
        coalesce(g.amount, 0),
        case when d.resource_kind = 'network_volume'
             then 'Network volume ' || d.resource_id || ' was billed for ' || secs_text(d.lingering_storage_seconds)
                  || ' s on ' || d.day || ' with no running pod attached'
             else 'Runpod pod ' || d.resource_id || ' billed volume disk for ' || secs_text(d.lingering_storage_seconds)
                  || ' s on ' || d.day || ' while its compute was stopped (stopped, not terminated)' end
            || '; threshold storage_lingering_age_seconds = ' || t.lingering_age_s || ' s.'
    from marts.resource_day d
    cross join settings t
    left join (select resource_id, day, sum(amount) as amount from marts.billed_segments
               where category in ('storage_lingering', 'network_volume') group by all) g using (resource_id, day)
    where d.lingering_storage_seconds > t.lingering_age_s
),

idle_excess as (
    select
        'SERVERLESS_IDLE_EXCESS', 'warning', e.endpoint_id, e.day,
        e.day::timestamptz, e.day::timestamptz + interval 1 day,
        e.idle_ms - e.expected_idle_ms,
        cast(e.rate_per_second * (e.idle_ms - e.expected_idle_ms) / 1000 as decimal(38, 12)),
        'Serverless endpoint ' || e.endpoint_id || ' billed ' || secs_text((e.idle_ms / 1000)::decimal(18, 3))
            || ' s of worker idle on ' || e.day || ' across ' || e.worker_sessions
            || ' worker sessions; the idle timeout and the gaps between requests explain '
            || secs_text((e.expected_idle_ms / 1000)::decimal(18, 3)) || ' s. Excess '
            || secs_text(((e.idle_ms - e.expected_idle_ms) / 1000)::decimal(18, 3))
            || ' s exceeds serverless_idle_tolerance_seconds = ' || t.idle_tol_s || ' s per session.'
    from intermediate.int_serverless__endpoint_days e
    cross join settings t
    where e.observed and e.idle_ms - e.expected_idle_ms > t.idle_tol_s * 1000 * e.worker_sessions
),

work_days as (
    select distinct w.resource_id, unnest(generate_series(cast(date_trunc('day', w.scheduled_at) as date),
           cast(date_trunc('day', least(w.window_end_at, now()) - interval 1 millisecond) as date),
           interval 1 day))::date as day
    from intermediate.int_resource__workloads w
),

without_activity as (
    select
        'BILLED_WITHOUT_ACTIVITY', 'warning', d.resource_id, d.day,
        d.day::timestamptz, d.day::timestamptz + interval 1 day,
        cast(d.billed_seconds * 1000 as bigint),
        (select sum(amount) from marts.billed_segments g where g.resource_id = d.resource_id and g.day = d.day
            and g.category in ('unobserved', 'idle_gap', 'startup', 'busy', 'tail')),
        'Runpod pod ' || d.resource_id || ' billed ' || secs_text(d.billed_seconds) || ' s of compute on ' || d.day
            || case when not exists (select 1 from intermediate.int_k8s__node_resources r where r.resource_id = d.resource_id)
                    then ' but maps to no Kubernetes node, so no workload was observed on it'
                    else ' but no GPU workload ran on its node that day' end
            || '; threshold billed_without_activity_min_seconds = ' || t.bwa_min_s || ' s.'
    from marts.resource_day d
    cross join settings t
    where d.resource_kind = 'instance' and d.billed_seconds > t.bwa_min_s
      and d.billed_after_exit_seconds = 0
      and not exists (select 1 from work_days w where w.resource_id = d.resource_id and w.day = d.day)
),

activity_without_billing as (
    select
        'ACTIVITY_WITHOUT_BILLING', 'error', w.resource_id, w.day,
        min(greatest(x.scheduled_at, w.day::timestamptz)),
        max(least(x.window_end_at, w.day::timestamptz + interval 1 day)),
        epoch_ms(max(least(x.window_end_at, w.day::timestamptz + interval 1 day)))
             - epoch_ms(min(greatest(x.scheduled_at, w.day::timestamptz))),
        cast(any_value(r.compute_rate_per_hour) * (epoch_ms(max(least(x.window_end_at, w.day::timestamptz + interval 1 day)))
             - epoch_ms(min(greatest(x.scheduled_at, w.day::timestamptz)))) / 3600000 as decimal(38, 12)),
        count(distinct x.pod_uid) || ' GPU workload(s) ran on node ' || min(x.node_name) || ' (resource '
            || w.resource_id || ') on ' || w.day || ' but the bill has no compute line for it that day'
            || ' (late or missing export); amount at stake uses the inventory or rate-card rate.'
    from work_days w
    join intermediate.int_resource__workloads x
      on x.resource_id = w.resource_id and x.scheduled_at < w.day::timestamptz + interval 1 day
     and x.window_end_at > w.day::timestamptz
    left join intermediate.int_runpod__pod_rates r on r.pod_id = w.resource_id
    left join (select distinct pod_id as resource_id, cast(date_trunc('day', bucket_start) as date) as day
               from intermediate.int_runpod__pod_buckets where compute_ms > 0 or compute_usd > 0) b
      on b.resource_id = w.resource_id and b.day = w.day
    where b.resource_id is null
      -- a day whose bill has not landed is awaiting it (marts.settlement), not missing a line
      and exists (select 1 from intermediate.int_billing__bill_days l
                  where l.day = w.day and l.bill_landed)
    group by w.resource_id, w.day
),

rate_missing as (
    select 'RATE_MISSING', 'error', pod_id, cast(date_trunc('day', bucket_start) as date),
           min(bucket_start), max(bucket_end), null::bigint, sum(compute_usd),
           'No compute rate for Runpod pod ' || pod_id || ': no inventory snapshot showed it RUNNING with a cost, '
           || 'and the rate card has no pod_per_hour or gpu_per_hour entry for it; ' || count(*)
           || ' bill line(s) cannot be turned into seconds.'
    from intermediate.int_runpod__pod_buckets
    where compute_ms is null and compute_usd > 0
    group by pod_id, cast(date_trunc('day', bucket_start) as date)
    union all
    select 'RATE_MISSING', 'error', endpoint_id, day, day::timestamptz, day::timestamptz + interval 1 day,
           null::bigint, worker_usd, 'No per-second rate for serverless endpoint ' || endpoint_id
           || ' in [rates.serverless_per_second]; its billed worker seconds cannot be derived.'
    from intermediate.int_serverless__endpoint_days
    where rate_per_second is null and worker_usd > 0
),

unioned as (
    select * from after_exit
    union all select * from lingering
    union all select * from idle_excess
    union all select * from without_activity
    union all select * from activity_without_billing
    union all select * from rate_missing
    union all select * from intermediate.int_findings__workloads
    union all select * from intermediate.int_findings__billing
    union all select * from intermediate.int_findings__commitments
),

final as (
    select
        'F-' || substr(md5(code || '|' || resource_id || '|' || day || '|' || coalesce(window_start::varchar, '')), 1, 16)
            as finding_id,
        code, severity, resource_id, day, window_start, window_end,
        cast(ms * 0.001::decimal(18, 3) as decimal(18, 3)) as seconds,
        cast(coalesce(amount_at_stake, 0) as decimal(38, 12)) as amount_at_stake,
        message
    from unioned
)

select * from final
where day between cfg('day_from')::date and cfg('day_to')::date
order by day, code, resource_id
