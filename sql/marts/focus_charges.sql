-- grain: one row per UTC day and FOCUS charge as its file names it (provider, account, service,
-- SKU, resource, category, units, period): the day's piece of every landed FOCUS row
-- (intermediate.int_focus__charge_days; a row longer than a day split by time), rows that
-- name the same charge added up. `reconciled` rows are instance compute: their money is also in
-- marts.resource_day and its segments. The others (storage, networking, databases, SaaS,
-- purchases, credits, taxes) are carried through here only: in the bill's total, the costs file
-- and the FOCUS export, without a lifecycle to hold them to. A usage-only row (`usage_only`: the
-- file bills nothing for it, BilledCost empty or all its costs 0) keeps the file's NULL (or 0)
-- BilledCost; `priced_cost` is the rate card's price of it (int_focus__charge_days), by
-- `price_source`, never added to billed_cost. Nothing from the file's position is a column, so
-- a file exported from this mart lands again as the same rows.
with pieces as (
    select * from intermediate.int_focus__charge_days
),

final as (
    select
        day,
        piece_start as charge_period_start,
        piece_end as charge_period_end,
        is_instance_compute as reconciled,
        resource_key as resource_id,
        provider_name, publisher_name, service_provider_name, host_provider_name,
        invoice_issuer_name, invoice_id,
        billing_account_id, billing_account_name, sub_account_id, billing_currency,
        charge_category, charge_class, charge_description, charge_frequency,
        service_category, service_subcategory, service_name, sku_id, sku_price_id,
        resource_id_raw as focus_resource_id, resource_name, resource_type, region_id,
        commitment_discount_id, commitment_discount_status, commitment_discount_category,
        commitment_discount_name, commitment_discount_type, commitment_discount_unit,
        sku_meter, sku_price_details,
        pricing_unit, consumed_unit, contracted_unit_price, list_unit_price,
        usage_only, price_source,
        sum(pricing_quantity) as pricing_quantity,
        sum(consumed_quantity) as consumed_quantity,
        sum(billed_cost) as billed_cost,
        sum(effective_cost) as effective_cost,
        sum(list_cost) as list_cost,
        sum(contracted_cost) as contracted_cost,
        sum(priced_cost) as priced_cost,
        sum(commitment_discount_quantity) as commitment_discount_quantity
    from pieces
    where day between cfg('day_from')::date and cfg('day_to')::date
    group by all
)

select * from final
order by all
