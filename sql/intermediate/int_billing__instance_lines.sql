-- grain: one row per billed instance and billing bucket, from every provider source:
-- Runpod v2/v1 pod billing and the FOCUS rows of instance compute (stg_focus__charges
-- is_instance_compute: billed time of a VM or GPU pod), each day's piece of them
-- (int_focus__charge_days). Every other FOCUS row (storage, networking, purchases, credits,
-- taxes) is no instance second: it is carried through as another charge (marts.other_charges).
-- covered_by_commitment: a FOCUS compute line a commitment paid for (BilledCost 0 and
-- EffectiveCost > 0: the FOCUS BilledCost excludes the amortised up-front fee, EffectiveCost
-- includes it), so its zero billed cost is no rate mismatch.
-- price_source: set on a usage-only FOCUS line (the file bills nothing for it: stg_focus__charges
-- usage_only) whose amount is the rate card's (int_focus__charge_days priced_cost, `rate_card_pod`
-- or `rate_card_sku`), not billed; NULL on a billed line.
-- amount_unpriced: a usage-only line no rate-card entry prices: its seconds count, its amount is
-- unknown and stands at the file's 0 (or 0 for its empty BilledCost), flagged rate_missing in
-- marts.resource_day and named by RATE_MISSING.
with pod_billing as (
    select * from staging.stg_runpod__pod_billing
),

charges as (
    select * from intermediate.int_focus__charge_days
),

runpod as (
    select pod_id, bucket_start, bucket_end, compute_amount_usd, disk_amount_usd, total_amount_usd,
           compute_seconds_billed, disk_gb_billed, source_format,
           cast(null as decimal(38, 12)) as line_rate_per_hour,
           false as covered_by_commitment,
           null::varchar as price_source, false as amount_unpriced,
           source_file, record_no
    from pod_billing
),

-- a VM's time is metered once per SKU: Google Cloud bills a GPU VM's hour as its GPU, its
-- cores and its memory, each a row of the same resource and hour; AWS splits one SKU's hour into
-- rows (part covered by a Savings Plan, part on demand). So the seconds of a resource's piece are
-- the largest of its SKUs' sums, and no more than the piece itself when several SKUs meter it (a
-- core SKU counts core-seconds: 12 vCPUs × an hour is 43,200 "seconds" of one hour).
sku_seconds as (
    select resource_key, piece_start, piece_end, coalesce(sku_id, '') as sku,
           sum(coalesce(consumed_quantity * consumed_unit_seconds, pricing_quantity * pricing_unit_seconds))
               as seconds
    from charges
    where is_instance_compute
    group by all
),

piece_seconds as (
    select resource_key, piece_start, piece_end,
           case when count(seconds) > 1
                then least(max(seconds), cast(epoch_ms(piece_end) - epoch_ms(piece_start) as decimal(38, 3))
                                   * 0.001::decimal(4, 3))
                else max(seconds) end as seconds
    from sku_seconds
    group by resource_key, piece_start, piece_end
),

focus as (
    select
        resource_key as pod_id,
        piece_start as bucket_start,
        piece_end as bucket_end,
        coalesce(sum(case when usage_only then coalesce(priced_cost, billed_cost) else billed_cost end),
                 case when bool_or(usage_only) then 0 end) as compute_amount_usd,
        cast(0 as decimal(38, 12)) as disk_amount_usd,
        coalesce(sum(case when usage_only then coalesce(priced_cost, billed_cost) else billed_cost end),
                 case when bool_or(usage_only) then 0 end) as total_amount_usd,
        -- the consumed time, else (no ConsumedQuantity, a conditional FOCUS column) the priced
        -- time, of the SKU that meters the most of it (piece_seconds)
        any_value(p.seconds) as compute_seconds_billed,
        cast(null as bigint) as disk_gb_billed,
        'focus' as source_format,
        -- ContractedUnitPrice is per PricingUnit: per hour when that unit is a duration
        coalesce(max(case pricing_unit_seconds when 3600 then contracted_unit_price
                          when 60 then contracted_unit_price * 60 when 1 then contracted_unit_price * 3600 end),
                 max(priced_rate_per_hour))
            as line_rate_per_hour,
        coalesce(bool_or(billed_cost = 0 and effective_cost > 0), false) as covered_by_commitment,
        min(price_source) filter (where usage_only) as price_source,
        bool_or(usage_only and priced_cost is null) as amount_unpriced,
        min(source_file) as source_file,
        min(record_no) as record_no
    from charges
    left join piece_seconds p using (resource_key, piece_start, piece_end)
    where is_instance_compute
    group by resource_key, piece_start, piece_end
),

final as (
    select * from runpod
    union all
    select * from focus
)

select * from final
