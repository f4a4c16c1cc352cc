-- grain: one row per FOCUS charge (source_file, record_no) and UTC day its charge period
-- overlaps: the charge's piece of that day. A charge whose period is longer than a day (a
-- month of storage, a monthly commitment fee, a tax on the month) is split across the days of
-- [ChargePeriodStart, ChargePeriodEnd) in proportion to time, each amount and quantity by the
-- macro time_share (recon/build/settings.py): exact decimals, and the pieces of a row add up to
-- the row exactly. A charge within one day is one piece, itself.
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

final as (
    select
        * exclude (billed_cost, effective_cost, list_cost, contracted_cost, consumed_quantity,
                   pricing_quantity, whole_us),
        -- [a, b): the piece's place in its charge's period, in microseconds from its start
        time_share(billed_cost, epoch_us(piece_start) - epoch_us(charge_start),
                   epoch_us(piece_end) - epoch_us(charge_start), whole_us) as billed_cost,
        time_share(effective_cost, epoch_us(piece_start) - epoch_us(charge_start),
                   epoch_us(piece_end) - epoch_us(charge_start), whole_us) as effective_cost,
        time_share(list_cost, epoch_us(piece_start) - epoch_us(charge_start),
                   epoch_us(piece_end) - epoch_us(charge_start), whole_us) as list_cost,
        time_share(contracted_cost, epoch_us(piece_start) - epoch_us(charge_start),
                   epoch_us(piece_end) - epoch_us(charge_start), whole_us) as contracted_cost,
        time_share(consumed_quantity, epoch_us(piece_start) - epoch_us(charge_start),
                   epoch_us(piece_end) - epoch_us(charge_start), whole_us) as consumed_quantity,
        time_share(pricing_quantity, epoch_us(piece_start) - epoch_us(charge_start),
                   epoch_us(piece_end) - epoch_us(charge_start), whole_us) as pricing_quantity
    from pieces
)

select * from final
