-- grain: one row per pod billing bucket with compute and storage converted to milliseconds.
-- v2 compute ms = amount ÷ rate (derived); v1 gives billed ms directly. A saved v1 line of a pod
-- no inventory or rate card prices (a pod terminated before any snapshot) is priced by its own
-- amount: less its disk GB billed at the running disk rate, ÷ its billed hours
-- (`bill_amount_per_hour`), so its money is never NULL.
--
-- Storage of a bucket B ms long with t_c ms of compute (Runpod bills pod disk per second:
-- volume and container disk at the running rate while compute runs, the volume alone at the
-- stopped rate while stopped; container disk is not billed while stopped):
--   disk_amount = (size_vol + size_ctr) * r_run * t_c / M + size_vol * r_stop * t_s / M,
--   t_c + t_s <= B (the pod may not exist for the whole bucket), M = hours_per_month * 3.6e6 ms.
-- So running storage money R = (size_vol + size_ctr) * r_run * t_c / M (at most the disk amount),
-- lingering money L = disk_amount - R, and lingering t_s = L * M / (size_vol * r_stop), capped at
-- B - t_c (derived, like v2 compute seconds). Cases (`storage_split`):
--   running        t_c >= B, or no pod volume (nothing is billed while stopped): all R, t_s = 0
--   stopped        t_c = 0: all L; t_s derived from size_vol * r_stop, else the whole bucket
--                  (`stopped_assumed`)
--   mixed          0 < t_c < B: R, L and t_s as above (the hour compute stops or starts)
--   mixed_unknown  a size or rate of the formula unknown: the disk money stays storage in its
--                  hour as storage_running, no lingering seconds, and a RATE_MISSING finding
--   bill_v1        a v1 line priced by its own amount: its disk is its running disk, R = all
with lines as (
    select b.*, r.gpu_type, r.gpu_count, r.disk_running_per_month, r.disk_stopped_per_month,
           r.volume_gb, r.container_disk_gb, r.disk_running_per_gb_month,
           r.compute_rate_per_hour as pod_rate_per_hour, r.rate_source as pod_rate_source
    from intermediate.int_billing__instance_lines b
    left join intermediate.int_runpod__pod_rates r using (pod_id)
),

running_costs as (
    select pod_id, snapshot_at, cost_per_hour_usd
    from staging.stg_runpod__pods
    where status = 'RUNNING' and cost_per_hour_usd > 0 and snapshot_at is not null
),

with_inventory as (
    -- the cost the inventory showed last before the bucket ended (rates change: savings plans)
    select l.*, c.cost_per_hour_usd as inventory_rate
    from lines l
    asof left join running_costs c on c.pod_id = l.pod_id and c.snapshot_at <= l.bucket_end
),

with_cards as (
    select
        w.*,
        (select r.usd from config.rates r
          where r.rate_kind = 'pod_per_hour' and r.match_key = w.pod_id
            and coalesce(r.valid_from, '0001-01-01') <= w.bucket_start::date
            and w.bucket_start::date < coalesce(r.valid_to, '9999-12-31')
          order by r.valid_from desc nulls last limit 1) as card_pod,
        (select r.usd * w.gpu_count from config.rates r
          where r.rate_kind = 'gpu_per_hour' and r.match_key = w.gpu_type
            and coalesce(r.valid_from, '0001-01-01') <= w.bucket_start::date
            and w.bucket_start::date < coalesce(r.valid_to, '9999-12-31')
          order by r.valid_from desc nulls last limit 1) as card_gpu,
        (select p.usd_per_gpu_hour * w.gpu_count from config.savings_plans p
          where p.gpu_type = w.gpu_type and w.gpu_count <= p.gpu_count
            and p.start_day <= w.bucket_start::date and w.bucket_start::date < p.end_day
          order by p.usd_per_gpu_hour limit 1) as plan_rate,
        (select p.plan_id from config.savings_plans p
          where p.gpu_type = w.gpu_type and w.gpu_count <= p.gpu_count
            and p.start_day <= w.bucket_start::date and w.bucket_start::date < p.end_day
          order by p.usd_per_gpu_hour limit 1) as plan_id
    from with_inventory w
),

v1_lines as (
    -- a v1 line's disk GB billed at the running disk rate over its billed seconds: what of its
    -- amount is disk when nothing else prices it (NULL: GB billed or the rate unknown)
    select
        *,
        case when source_format = 'v1' then
             case when disk_gb_billed = 0 then 0
                  else cast(disk_gb_billed * disk_running_per_gb_month * coalesce(compute_seconds_billed, 0)
                            / (cfg_int('hours_per_month') * 3600) as decimal(38, 12)) end
        end as v1_running_disk_usd,
        case when source_format = 'v1' and compute_seconds_billed > 0 then
             (total_amount_usd - coalesce(cast(disk_gb_billed * disk_running_per_gb_month * compute_seconds_billed
                  / (cfg_int('hours_per_month') * 3600) as decimal(38, 12)), 0)) * 3600 / compute_seconds_billed
        end as v1_bill_rate
    from with_cards
),

buckets as (
    select
        * exclude (line_rate_per_hour),
        -- what the provider charged: turns amounts into seconds
        coalesce(line_rate_per_hour, inventory_rate, pod_rate_per_hour, card_pod, card_gpu,
                 case when source_format = 'focus' and compute_seconds_billed > 0
                      then compute_amount_usd * 3600 / compute_seconds_billed end, v1_bill_rate)
            as compute_rate_per_hour,
        case when price_source is not null then price_source
             when line_rate_per_hour is not null then 'bill_contracted_unit_price'
             when inventory_rate is not null then 'inventory'
             when pod_rate_per_hour is not null then pod_rate_source
             when card_pod is not null then 'rate_card_pod'
             when card_gpu is not null then 'rate_card_gpu'
             when source_format = 'focus' or v1_bill_rate is not null then 'bill_amount_per_hour' end
            as rate_source,
        -- what was agreed: the savings plan in force, else the rate card, else what was charged
        coalesce(plan_rate, card_pod, card_gpu, line_rate_per_hour, inventory_rate, pod_rate_per_hour,
                 case when source_format = 'focus' and compute_seconds_billed > 0
                      then compute_amount_usd * 3600 / compute_seconds_billed end, v1_bill_rate)
            as contracted_rate_per_hour,
        epoch_ms(bucket_end) - epoch_ms(bucket_start) as bucket_ms
    from v1_lines
),

compute as (
    select
        *,
        case when source_format in ('v1', 'focus') then cast(round(coalesce(compute_seconds_billed, 0) * 1000) as bigint)
             when compute_amount_usd = 0 then 0
             when compute_rate_per_hour > 0
             then cast(round(compute_amount_usd * 3600000 / compute_rate_per_hour) as bigint)
        end as compute_ms,
        source_format = 'v2' as compute_derived
    from buckets
),

amounts as (
    select
        *,
        case when source_format <> 'v1' then compute_amount_usd
             when compute_ms = 0 then 0
             when rate_source = 'bill_amount_per_hour' then total_amount_usd - coalesce(v1_running_disk_usd, 0)
             else cast(compute_ms * compute_rate_per_hour / 3600000 as decimal(38, 12)) end as compute_usd
    from compute
),

split as (
    select
        *,
        case when source_format = 'v1' then total_amount_usd - compute_usd else disk_amount_usd end as disk_usd,
        case when source_format = 'v1' and rate_source = 'bill_amount_per_hour' then 'bill_v1'
             -- no compute seconds (the compute rate is missing: RATE_MISSING names it)
             when compute_ms is null then 'running'
             when compute_ms = 0 then case when disk_stopped_per_month > 0 then 'stopped' else 'stopped_assumed' end
             when compute_ms >= bucket_ms or volume_gb = 0 or disk_stopped_per_month = 0 then 'running'
             when disk_running_per_month is not null and disk_stopped_per_month > 0 then 'mixed'
             else 'mixed_unknown' end as storage_split,
        cast(cfg_int('hours_per_month') as bigint) * 3600000 as month_ms
    from amounts
),

storage as (
    select
        *,
        case when disk_usd <= 0 or storage_split not in ('stopped', 'stopped_assumed', 'mixed') then 0
             when storage_split = 'stopped_assumed' then bucket_ms
             when storage_split = 'stopped'
             then least(bucket_ms, cast(round(disk_usd * month_ms / disk_stopped_per_month) as bigint))
             else least(bucket_ms - compute_ms, greatest(0, cast(round(
                 (disk_usd - disk_running_per_month * compute_ms / month_ms) * month_ms / disk_stopped_per_month)
                 as bigint))) end as storage_lingering_ms
    from split
),

-- the running disk's money: all of it unless part of the hour was stopped. What the disk amount
-- holds beyond the running rate but buys no stopped millisecond at the stopped rate is the bill's
-- rounding (~1e-10 USD), not lingering storage: it stays with the running disk instead of making
-- a zero-second storage_lingering row
running as (
    select
        *,
        case when storage_lingering_ms = 0 then disk_usd
             when storage_split in ('stopped', 'stopped_assumed') then 0
             else least(disk_usd, greatest(0, cast(disk_running_per_month * compute_ms / month_ms
                                                   as decimal(38, 12)))) end as running_usd
    from storage
),

final as (
    select
        pod_id, bucket_start, bucket_end, bucket_ms, source_format, compute_rate_per_hour,
        rate_source, contracted_rate_per_hour, plan_id, compute_ms, compute_derived, compute_usd, disk_usd, total_amount_usd,
        case when disk_usd > 0 then coalesce(compute_ms, 0) else 0 end as storage_running_ms,
        running_usd as storage_running_usd,
        storage_lingering_ms,
        disk_usd - running_usd as storage_lingering_usd,
        storage_split,
        storage_lingering_ms > 0 and storage_split in ('stopped', 'mixed') as storage_lingering_derived,
        -- the disk money could not be split (mixed_unknown), or its bill gave no disk GB or no
        -- running disk rate to take it out of a v1 line priced by its own amount
        disk_usd > 0 and storage_split = 'mixed_unknown'
            or storage_split = 'bill_v1' and v1_running_disk_usd is null and total_amount_usd > 0
            as storage_rate_missing,
        volume_gb, container_disk_gb, disk_gb_billed, covered_by_commitment,
        -- a usage-only FOCUS line's amount is the rate card's, not billed (instance_lines)
        price_source is not null as amount_priced, amount_unpriced,
        source_file, record_no
    from running
)

select * from final
