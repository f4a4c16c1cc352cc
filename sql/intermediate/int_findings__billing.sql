-- grain: one row per finding about the bill itself: DUPLICATE_BILLING, RATE_MISMATCH,
-- BILLED_EXCEEDS_RUNTIME. Columns as marts.findings before ids.
with lines as (
    select resource_id as pod_id, bucket_start, amount, source_file, locator
    from staging.stg_runpod__bill_lines
    where source in ('v2_pods', 'v1_pods')
),

dups as (
    -- the same pod and hour twice in ONE response: the provider billed it twice. Repeated pulls
    -- of a window are versions (settlement), not duplicates.
    select pod_id, bucket_start, source_file, count(*) as copies, sum(amount) - max(amount) as extra,
           string_agg(locator, ', ' order by locator) as where_
    from lines
    where bucket_start is not null
    group by all
    having count(*) > 1
),

duplicate as (
    select 'DUPLICATE_BILLING' as code, 'error' as severity, pod_id as resource_id,
           cast(date_trunc('day', bucket_start) as date) as day,
           bucket_start as window_start, bucket_start + interval 1 hour as window_end,
           3600000 * (copies - 1) as ms, extra as amount_at_stake,
           'Runpod pod ' || pod_id || ' is billed ' || copies || ' times for the hour starting '
               || strftime(bucket_start, '%Y-%m-%dT%H:%M:%SZ') || ' in one export (' || regexp_extract(source_file, '[^/\\]+$') || ': '
               || where_ || '); the reconciliation counts it once, $' || round(extra, 6)
               || ' was billed on top.' as message
    from dups
),

rate_days as (
    select pod_id as resource_id, cast(date_trunc('day', bucket_start) as date) as day,
           sum(compute_usd) as billed,
           sum(cast(compute_ms * contracted_rate_per_hour / 3600000 as decimal(38, 12))) as expected,
           sum(compute_ms) as ms,
           max(compute_rate_per_hour) as charged_rate, max(contracted_rate_per_hour) as contracted_rate,
           min(rate_source) as rate_source, min(plan_id) as plan_id
    from intermediate.int_runpod__pod_buckets
    -- a commitment paid for the usage: its zero billed cost is not a price (instance_lines)
    where compute_ms > 0 and contracted_rate_per_hour is not null and not covered_by_commitment
    group by all
),

rate_mismatch as (
    select 'RATE_MISMATCH', 'error', resource_id, day, day::timestamptz, day::timestamptz + interval 1 day,
           ms, billed - expected,
           (case when resource_id in (select pod_id from intermediate.int_runpod__pod_buckets where source_format = 'focus') then 'Instance ' else 'Runpod pod ' end) || resource_id || ' was billed $' || round(billed, 4) || ' for compute on ' || day
               || ' at $' || round(charged_rate, 4) || '/h (' || rate_source || '), but ' || (ms // 1000)
               || ' s at the contracted $' || round(contracted_rate, 4) || '/h'
               || coalesce(' (savings plan ' || plan_id || ')', ' (rate card)') || ' come to $' || round(expected, 4)
               || '; thresholds rate_mismatch_tolerance_usd = ' || cfg('rate_mismatch_tolerance_usd')
               || ', rate_mismatch_tolerance_ratio = ' || cfg('rate_mismatch_tolerance_ratio') || '.'
    from rate_days
    where abs(billed - expected) > cfg('rate_mismatch_tolerance_usd')::decimal(18, 6)
      and abs(billed - expected) > cfg('rate_mismatch_tolerance_ratio')::decimal(18, 6) * abs(expected)
),

coverage as (
    select s.session_id, s.resource_id, s.start_at, s.end_at,
           count(n.node_uid) as nodes,
           sum(greatest(0, epoch_ms(least(s.end_at, coalesce(n.removed_at, '2100-01-01'::timestamptz)))
                        - epoch_ms(greatest(s.start_at, n.registered_at
                                            - to_seconds(cfg_int('node_boot_allowance_seconds')))))) as covered_ms,
           max(coalesce(n.removed_at, '2100-01-01'::timestamptz)) as covered_until
    from intermediate.int_resource__compute_sessions s
    join intermediate.int_k8s__node_ready n
      on n.resource_id = s.resource_id
     and n.registered_at - to_seconds(cfg_int('node_boot_allowance_seconds')) < s.end_at
     and coalesce(n.removed_at, '2100-01-01'::timestamptz) > s.start_at
    group by all
),

exceeds as (
    select 'BILLED_EXCEEDS_RUNTIME', 'error', c.resource_id,
           cast(date_trunc('day', least(c.covered_until, c.end_at) - interval 1 millisecond) as date),
           least(c.covered_until, c.end_at), c.end_at,
           epoch_ms(c.end_at) - epoch_ms(c.start_at) - least(c.covered_ms, epoch_ms(c.end_at) - epoch_ms(c.start_at)),
           (select sum(cast(g.amount_usd * (epoch_ms(least(g.seg_end, c.end_at))
                        - epoch_ms(greatest(g.seg_start, c.covered_until))) / g.ms as decimal(38, 12)))
              from intermediate.int_resource__instance_segments g
             where g.session_id = c.session_id and g.seg_end > c.covered_until),
           (case when c.resource_id in (select pod_id from intermediate.int_runpod__pod_buckets where source_format = 'focus') then 'Instance ' else 'Runpod pod ' end) || c.resource_id || ' was billed for compute until '
               || strftime(c.end_at, '%Y-%m-%dT%H:%M:%SZ') || ' but its Kubernetes node was removed at '
               || strftime(c.covered_until, '%Y-%m-%dT%H:%M:%SZ') || ': '
               || ((epoch_ms(c.end_at) - epoch_ms(c.start_at) - least(c.covered_ms, epoch_ms(c.end_at) - epoch_ms(c.start_at))) // 1000)
               || ' s billed beyond the observed runtime; threshold billed_exceeds_runtime_tolerance_seconds = '
               || cfg_int('billed_exceeds_runtime_tolerance_seconds') || ' s (node_boot_allowance_seconds = '
               || cfg_int('node_boot_allowance_seconds') || ' s).'
    from coverage c
    where epoch_ms(c.end_at) - epoch_ms(c.start_at) - least(c.covered_ms, epoch_ms(c.end_at) - epoch_ms(c.start_at))
          > cfg_int('billed_exceeds_runtime_tolerance_seconds') * 1000
      and c.covered_until < c.end_at
),

final as (
    select * from duplicate
    union all select * from rate_mismatch
    union all select * from exceeds
)

select * from final
