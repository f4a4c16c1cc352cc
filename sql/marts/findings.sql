-- grain: one row per finding. finding_id is a hash of what identifies it, so it is stable across
-- reruns. Every finding names the threshold it crossed and the evidence, in words finance reads.
-- The lifecycle codes are here; workload, bill and commitment codes come from intermediate.int_findings__*.
-- One wasted second is money in one finding: BILLED_AFTER_EXIT stops where the node's observed
-- life ends (BILLED_EXCEEDS_RUNTIME takes the rest); UNSCHEDULABLE_GPU carries no money (the
-- idle nodes' idle_gap holds it); RATE_MISMATCH is price, not time; SERVERLESS_IDLE_EXCESS
-- claims only the idle SERVERLESS_STUCK_WORKER and SERVERLESS_ALWAYS_ON do not hold.
-- Who a finding is about (namespace, owner_kind, owner_name, team, the last columns): the pod's
-- for a pod's finding; the last workload's for a tail (BILLED_AFTER_EXIT); the ScaledObject's
-- for SCALE_TO_ZERO_LATE and HPA_SCALE_DOWN_SLOW; the workloads' for ACTIVITY_WITHOUT_BILLING
-- when they all agree. NULL where no workload explains the money (no node life, the bill itself,
-- storage, serverless, commitments, the account), never spread over teams: a group by team keeps
-- it apart.
with settings as (
    select
        cfg_int('storage_lingering_age_seconds') as lingering_age_s,
        cfg_int('serverless_idle_tolerance_seconds') as idle_tol_s,
        cfg_int('billed_without_activity_min_seconds') as bwa_min_s
),

-- the tail each session may have after its last task, by what ended that task (the model and its
-- parts: intermediate.int_resource__tail_model)
tails as (
    select m.*, m.last_finished_at + to_seconds(m.allowed_seconds) as allowed_until
    from intermediate.int_resource__tail_model m
    where epoch_ms(m.end_at) - epoch_ms(m.last_finished_at) > m.allowed_seconds * 1000
),

after_exit as (
    select
        'BILLED_AFTER_EXIT' as code, 'warning' as severity, s.resource_id,
        cast(date_trunc('day', s.last_finished_at) as date) as day,
        s.allowed_until as window_start,
        s.end_at as window_end,
        epoch_ms(s.end_at) - epoch_ms(s.allowed_until) as ms,
        (select sum(cast(g.amount_usd * (epoch_ms(least(g.seg_end, s.end_at, s.covered_until + to_seconds(cfg_int('billed_exceeds_runtime_tolerance_seconds'))))
                     - epoch_ms(greatest(g.seg_start, s.allowed_until)))
                     / g.ms as decimal(38, 12)))
           from intermediate.int_resource__instance_segments g
          where g.session_id = s.session_id and g.category = 'tail'
            and g.seg_end > s.allowed_until) as amount_at_stake,
        (case when s.resource_id in (select pod_id from intermediate.int_runpod__pod_buckets where source_format = 'focus') then 'Instance ' else 'Runpod pod ' end) || s.resource_id || ' (node ' || coalesce(s.node_name, '?') || ') kept billing compute for '
            || ((epoch_ms(s.end_at) - epoch_ms(s.last_finished_at)) // 1000) || ' s after its last task ('
            || coalesce(s.last_pod, '?') || ') finished at ' || strftime(s.last_finished_at, '%Y-%m-%dT%H:%M:%SZ')
            || '; compute stopped at ' || strftime(s.end_at, '%Y-%m-%dT%H:%M:%SZ') || '. Expected tail at most '
            || s.allowed_seconds || ' s (' || s.allowed_parts || '): '
            -- the finding's seconds, said in words (the table's seconds were not the message's)
            || ((epoch_ms(s.end_at) - epoch_ms(s.allowed_until)) // 1000) || ' s billed beyond it.'
            as message,
        -- the last workload's: its owner's setting (or the node scale-down after it) allowed the tail
        s.namespace, s.owner_kind, s.owner_name, s.team
    from tails s
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

-- what SERVERLESS_STUCK_WORKER and SERVERLESS_ALWAYS_ON hold of an endpoint-day's billed idle
-- (intermediate.int_findings__serverless): the idle excess is claimed only beyond it, so a second
-- of a worker that did not scale down, or of an hour billed with no job, is money once
serverless_held as (
    select resource_id as endpoint_id, day, sum(idle_held_ms) as held_ms
    from intermediate.int_findings__serverless
    group by all
),

idle_excess_days as (
    select e.*, coalesce(h.held_ms, 0) as held_ms,
           e.idle_ms - e.expected_idle_ms - coalesce(h.held_ms, 0) as excess_ms
    from intermediate.int_serverless__endpoint_days e
    left join serverless_held h using (endpoint_id, day)
),

idle_excess as (
    select
        'SERVERLESS_IDLE_EXCESS', 'warning', e.endpoint_id, e.day,
        e.day::timestamptz, e.day::timestamptz + interval 1 day,
        e.excess_ms,
        cast(e.rate_per_second * e.excess_ms / 1000 as decimal(38, 12)),
        'Serverless endpoint ' || e.endpoint_id || ' billed ' || secs_text((e.idle_ms / 1000)::decimal(18, 3))
            || ' s of worker idle on ' || e.day || ' across ' || e.worker_sessions
            || ' worker sessions; the idle timeout and the gaps between requests explain '
            || secs_text((e.expected_idle_ms / 1000)::decimal(18, 3)) || ' s'
            || case when e.held_ms > 0
                    then ', and SERVERLESS_STUCK_WORKER or SERVERLESS_ALWAYS_ON hold '
                         || secs_text((e.held_ms / 1000)::decimal(18, 3)) || ' s'
                    else '' end
            || '. Excess ' || secs_text((e.excess_ms / 1000)::decimal(18, 3))
            || ' s exceeds serverless_idle_tolerance_seconds = ' || t.idle_tol_s || ' s per session.'
    from idle_excess_days e
    cross join settings t
    where e.observed and e.excess_ms > t.idle_tol_s * 1000 * e.worker_sessions
),

work_days as (
    select distinct w.resource_id, unnest(generate_series(cast(date_trunc('day', w.scheduled_at) as date),
           cast(date_trunc('day', least(w.window_end_at, now()) - interval 1 millisecond) as date),
           interval 1 day))::date as day
    from intermediate.int_resource__workloads w
),

-- the team a node's label names (intermediate.int_resource__segment_owners' last rule), where
-- it names one on that resource-day: who left the node up with nothing on it
node_owner_days as (
    select resource_id, day, any_value(owner_name) as owner_name, any_value(team) as team
    from intermediate.int_resource__segment_owners
    where owner_kind = 'Node'
    group by all
    having count(distinct (owner_name, team)) = 1
),

without_activity as (
    select
        'BILLED_WITHOUT_ACTIVITY', 'warning', d.resource_id, d.day,
        d.day::timestamptz, d.day::timestamptz + interval 1 day,
        cast(d.billed_seconds * 1000 as bigint),
        (select sum(amount) from marts.billed_segments g where g.resource_id = d.resource_id and g.day = d.day
            and g.category in ('unobserved', 'idle_gap', 'startup', 'busy', 'tail')),
        (case when d.resource_id in (select pod_id from intermediate.int_runpod__pod_buckets where source_format = 'focus') then 'Instance ' else 'Runpod pod ' end) || d.resource_id || ' billed ' || secs_text(d.billed_seconds) || ' s of compute on ' || d.day
            || case when not exists (select 1 from intermediate.int_k8s__node_resources r where r.resource_id = d.resource_id)
                    then ' but maps to no Kubernetes node, so no workload was observed on it'
                    else ' but no GPU workload ran on its node that day' end
            || '; threshold billed_without_activity_min_seconds = ' || t.bwa_min_s || ' s.'
            || coalesce(' Node ' || n.owner_name || ' is labelled team ' || n.team || '.', ''),
        null::varchar, case when n.team is not null then 'Node' end, n.owner_name, n.team
    from marts.resource_day d
    cross join settings t
    left join node_owner_days n using (resource_id, day)
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
            || ' (late or missing export); amount at stake uses the inventory or rate-card rate.',
        -- the workloads' owner when they all share one; of several, none is picked
        case when count(distinct row(x.namespace, o.owner_kind, o.owner_name, x.team)) = 1 then min(x.namespace) end,
        case when count(distinct row(x.namespace, o.owner_kind, o.owner_name, x.team)) = 1 then min(o.owner_kind) end,
        case when count(distinct row(x.namespace, o.owner_kind, o.owner_name, x.team)) = 1 then min(o.owner_name) end,
        case when count(distinct row(x.namespace, o.owner_kind, o.owner_name, x.team)) = 1 then min(x.team) end
    from work_days w
    join intermediate.int_resource__workloads x
      on x.resource_id = w.resource_id and x.scheduled_at < w.day::timestamptz + interval 1 day
     and x.window_end_at > w.day::timestamptz
    left join intermediate.int_k8s__pod_owners o
      on o.cluster is not distinct from x.cluster and o.pod_uid = x.pod_uid
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
    -- the disk of an hour compute stopped or started in, which a size or rate it takes to split
    -- it is unknown for (the formula: sql/intermediate/int_runpod__pod_buckets.sql): its money
    -- is storage_running's, none of it lingering
    select 'RATE_MISSING', 'warning', b.pod_id, cast(date_trunc('day', b.bucket_start) as date),
           min(b.bucket_start), max(b.bucket_end), null::bigint, sum(b.disk_usd),
           'Runpod pod ' || b.pod_id || ' billed $' || round(sum(b.disk_usd), 6) || ' of disk in '
           || count(*) || ' hour(s) '
           || case when bool_and(b.storage_split = 'bill_v1')
                   then 'of a saved v1 bill nothing else prices, with no '
                        || concat_ws(' and no ', case when bool_or(b.disk_gb_billed is null) then 'diskSpaceBilledGb' end,
                                     case when any_value(r.disk_running_per_gb_month) is null
                                          then 'rates.disk_running_per_gb_month' end)
                        || ': its disk is counted with its compute'
                   else 'that compute ran for part of, with no '
                        || concat_ws(' and no ',
                               case when any_value(r.volume_gb) is null
                                    then 'volume size (mounts.persistent.size or volumeInGb in an inventory snapshot)' end,
                               case when any_value(r.container_disk_gb) is null
                                    then 'container disk size (disk or containerDiskInGb)' end,
                               case when any_value(r.disk_running_per_gb_month) is null then 'rates.disk_running_per_gb_month' end,
                               case when any_value(r.volume_stopped_per_gb_month) is null then 'rates.volume_stopped_per_gb_month' end)
                        || ': the disk cannot be split into running storage and storage lingering while '
                        || 'stopped, so it is all storage_running and no lingering seconds are counted' end
           || '.'
    from intermediate.int_runpod__pod_buckets b
    left join intermediate.int_runpod__pod_rates r using (pod_id)
    where b.storage_rate_missing
    group by b.pod_id, cast(date_trunc('day', b.bucket_start) as date)
    union all
    select 'RATE_MISSING', 'error', endpoint_id, day, day::timestamptz, day::timestamptz + interval 1 day,
           null::bigint, worker_usd, 'No per-second rate for serverless endpoint ' || endpoint_id
           || ' in [rates.serverless_per_second]; its billed worker seconds cannot be derived.'
    from intermediate.int_serverless__endpoint_days
    where rate_per_second is null and worker_usd > 0
    union all
    -- usage-only instance compute (the file bills no cost: stg_focus__charges usage_only) that
    -- no rate-card entry prices (int_focus__charge_days priced_cost NULL): its seconds reconcile,
    -- its money is unknown (0 in marts.resource_day, flagged rate_missing)
    select 'RATE_MISSING', 'error', resource_key, day, min(piece_start), max(piece_end),
           cast(round(sum(coalesce(consumed_quantity * consumed_unit_seconds,
                                   pricing_quantity * pricing_unit_seconds)) * 1000) as bigint),
           null::decimal(38, 12),
           'FOCUS file ' || regexp_extract(min(source_file), '[^/\\]+$') || ' bills no cost for '
           || round(sum(coalesce(consumed_quantity * consumed_unit_seconds,
                                 pricing_quantity * pricing_unit_seconds)), 3)
           || ' s of usage-only compute of resource ' || resource_key || ' on ' || day
           || ' (SKU ' || coalesce(string_agg(distinct sku_id, ', '), 'none') || ', BilledCost empty or 0)'
           || ', and the rate card has no pod_per_hour entry for ' || resource_key
           || ' and no sku_per_unit entry for its SKU: the amount is unknown, counted as $0.'
    from intermediate.int_focus__charge_days
    where is_instance_compute and usage_only and priced_cost is null
    group by resource_key, day
),

-- an invoice's amount the reconciled bill and what landed after its issue do not explain
-- (marts.invoice_tieout): the invoice's, on the last day of its period
invoice_mismatch as (
    select 'INVOICE_MISMATCH', 'error', 'invoice:' || invoice_id || '/' || cost_center || '/' || service,
           cast(period_end - interval 1 day as date), period_start, period_end, null::bigint,
           abs(unexplained_amount),
           'Invoice ' || invoice_id || ' (' || issuer || ', cost center ' || cost_center || ', '
           || strftime(period_start, '%Y-%m-%d') || ' to ' || strftime(period_end, '%Y-%m-%d')
           || ', ' || service || ', scope ' || scope || ') says $' || printf('%.2f', invoice_amount)
           || '; the reconciled bill of the period is $' || printf('%.2f', reconciled_amount)
           || ' (difference $' || printf('%.2f', difference) || '). '
           || case when explanation <> '' then 'Explained: ' || explanation || '. ' else '' end
           || 'Unexplained: $' || printf('%.2f', unexplained_amount) || ', beyond the tolerance of $'
           || printf('%.2f', tolerance) || ' (thresholds.invoice_mismatch_tolerance_usd; '
           || source_file || ' ' || locators || ').'
    from marts.invoice_tieout
    where status = 'mismatch'
),

-- no workload's: the owner columns are NULL (namespace, owner_kind, owner_name, team)
unowned as (
    select * from lingering
    union all select * from idle_excess
    union all select code, severity, resource_id, day, window_start, window_end, ms, amount_at_stake, message
              from intermediate.int_findings__serverless
    union all select * from rate_missing
    union all select * from intermediate.int_findings__billing
    union all select * from intermediate.int_findings__commitments
    union all select * from invoice_mismatch
),

unioned as (
    select * from after_exit
    union all select * from activity_without_billing
    union all select * from without_activity
    union all select * from intermediate.int_findings__workloads
    union all select * from intermediate.int_findings__gpu_sharing
    union all select * from intermediate.int_findings__hpa
    union all select *, null::varchar, null::varchar, null::varchar, null::varchar from unowned
),

final as (
    select
        'F-' || substr(md5(code || '|' || resource_id || '|' || day || '|' || coalesce(window_start::varchar, '')), 1, 16)
            as finding_id,
        code, severity, resource_id, day, window_start, window_end,
        cast(ms * 0.001::decimal(18, 3) as decimal(18, 3)) as seconds,
        cast(coalesce(amount_at_stake, 0) as decimal(38, 12)) as amount_at_stake,
        message,
        namespace, owner_kind, owner_name, team
    from unioned
)

select * from final
where day between cfg('day_from')::date and cfg('day_to')::date
order by day, code, resource_id
