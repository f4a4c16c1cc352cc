-- grain: one row per FOCUS charge (source_file, record_no) and UTC day its charge period
-- overlaps: the charge's piece of that day. A charge whose period is longer than a day (a
-- month of storage, a monthly commitment fee, a tax on the month) is split across the days of
-- [ChargePeriodStart, ChargePeriodEnd) in proportion to time, each amount and quantity by the
-- macro time_share (recon/build/settings.py): exact decimals, and the pieces of a row add up to
-- the row exactly. A charge within one day is one piece, itself.
--
-- priced_cost: what the rate card says a usage-only row (stg_focus__charges usage_only: the file
-- bills nothing for it) costs, the project's price and never the file's BilledCost, which stays
-- NULL (or the 0 it wrote). Instance compute by the resource's own rate (pod_per_hour keyed by
-- the resource id) × its seconds; else by its SKU's rate per unit (sku_per_unit keyed by SkuId,
-- USD per PricingUnit, or per ConsumedUnit when the row has no PricingQuantity) × its quantity.
-- Both effective-dated by the piece's day. NULL where no entry matches: the amount is unknown
-- (price_source NULL; RATE_MISSING for instance compute).
with charges as (
    select * from staging.stg_focus__charges
),

pieces as (
    select
        c.*,
        d.day,
        greatest(c.charge_start, d.day::timestamptz) as piece_start,
        least(c.charge_end, d.day::timestamptz + interval 1 day) as piece_end,
        epoch_us(c.charge_end) - epoch_us(c.charge_start) as whole_us
    from charges c,
         lateral (select unnest(generate_series(cast(date_trunc('day', c.charge_start) as date),
                  cast(date_trunc('day', c.charge_end - interval 1 microsecond) as date),
                  interval 1 day))::date as day) d
),

placed as (
    -- [a_us, b_us): the piece's place in its charge's period, in microseconds from its start
    select *, epoch_us(piece_start) - epoch_us(charge_start) as a_us,
           epoch_us(piece_end) - epoch_us(charge_start) as b_us
    from pieces
),

final as (
    select
        * exclude (billed_cost, effective_cost, list_cost, contracted_cost, consumed_quantity,
                   pricing_quantity, commitment_discount_quantity, whole_us, a_us, b_us),
        time_share(billed_cost, a_us, b_us, whole_us) as billed_cost,
        time_share(effective_cost, a_us, b_us, whole_us) as effective_cost,
        time_share(list_cost, a_us, b_us, whole_us) as list_cost,
        time_share(contracted_cost, a_us, b_us, whole_us) as contracted_cost,
        time_share(consumed_quantity, a_us, b_us, whole_us) as consumed_quantity,
        time_share(pricing_quantity, a_us, b_us, whole_us) as pricing_quantity,
        time_share(commitment_discount_quantity, a_us, b_us, whole_us) as commitment_discount_quantity
    from placed
),

cards as (
    select
        f.*,
        coalesce(consumed_quantity * consumed_unit_seconds, pricing_quantity * pricing_unit_seconds)
            as usage_seconds,
        case when pricing_quantity is not null then pricing_unit_seconds else consumed_unit_seconds end
            as unit_seconds,
        (select r.usd from config.rates r
          where f.usage_only and f.is_instance_compute
            and r.rate_kind = 'pod_per_hour' and r.match_key = f.resource_key
            and coalesce(r.valid_from, '0001-01-01') <= f.day and f.day < coalesce(r.valid_to, '9999-12-31')
          order by r.valid_from desc nulls last limit 1) as card_per_hour,
        (select r.usd from config.rates r
          where f.usage_only and r.rate_kind = 'sku_per_unit' and r.match_key = f.sku_id
            and coalesce(r.valid_from, '0001-01-01') <= f.day and f.day < coalesce(r.valid_to, '9999-12-31')
          order by r.valid_from desc nulls last limit 1) as card_per_unit
    from final f
),

priced as (
    select
        * exclude (usage_seconds, unit_seconds, card_per_hour, card_per_unit),
        case when card_per_hour is not null and usage_seconds is not null
             then cast(usage_seconds * card_per_hour / 3600 as decimal(38, 12))
             when card_per_unit is not null
             then cast(coalesce(pricing_quantity, consumed_quantity) * card_per_unit as decimal(38, 12))
        end as priced_cost,
        case when card_per_hour is not null and usage_seconds is not null then 'rate_card_pod'
             when card_per_unit is not null then 'rate_card_sku' end as price_source,
        -- the rate that priced it, per hour, when its unit is a duration
        case when card_per_hour is not null and usage_seconds is not null then card_per_hour
             when card_per_unit is not null and unit_seconds > 0
             then cast(card_per_unit * 3600 / unit_seconds as decimal(38, 12)) end
            as priced_rate_per_hour
    from cards
)

select * from priced
