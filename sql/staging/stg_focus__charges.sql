-- grain: one row per FOCUS cost-and-usage row (source_file, record_no). Renames and casts only.
-- resource_key is the last segment of ResourceId (an ARN, a GCP/Azure resource path or a bare
-- id), the same rule that maps a node's spec.providerID.
with source as (
    select * from raw.focus_rows
),

final as (
    select
        doc ->> '$.ResourceId' as resource_id_raw,
        regexp_extract(doc ->> '$.ResourceId', '([^/:]+)/*$', 1) as resource_key,
        doc ->> '$.ResourceName' as resource_name,
        try_cast(doc ->> '$.ChargePeriodStart' as timestamptz) as charge_start,
        try_cast(doc ->> '$.ChargePeriodEnd' as timestamptz) as charge_end,
        doc ->> '$.ChargeCategory' as charge_category,
        doc ->> '$.ChargeClass' as charge_class,
        doc ->> '$.ServiceCategory' as service_category,
        doc ->> '$.ServiceName' as service_name,
        doc ->> '$.SkuId' as sku_id,
        try_cast(doc ->> '$.BilledCost' as decimal(38, 12)) as billed_cost,
        try_cast(doc ->> '$.EffectiveCost' as decimal(38, 12)) as effective_cost,
        try_cast(doc ->> '$.ListCost' as decimal(38, 12)) as list_cost,
        try_cast(doc ->> '$.ContractedCost' as decimal(38, 12)) as contracted_cost,
        try_cast(doc ->> '$.ConsumedQuantity' as decimal(38, 12)) as consumed_quantity,
        doc ->> '$.ConsumedUnit' as consumed_unit,
        try_cast(doc ->> '$.PricingQuantity' as decimal(38, 12)) as pricing_quantity,
        doc ->> '$.PricingUnit' as pricing_unit,
        try_cast(doc ->> '$.ContractedUnitPrice' as decimal(38, 12)) as contracted_unit_price,
        doc ->> '$.CommitmentDiscountId' as commitment_discount_id,
        doc ->> '$.CommitmentDiscountStatus' as commitment_discount_status,
        doc ->> '$.ProviderName' as provider_name,
        doc ->> '$.BillingCurrency' as billing_currency,
        -- seconds per consumed unit: hours, seconds or minutes; NULL when the unit is not time
        case when lower(doc ->> '$.ConsumedUnit') similar to '.*(hour|hrs|^h$).*' then 3600
             when lower(doc ->> '$.ConsumedUnit') similar to '.*(second|^s$).*' then 1
             when lower(doc ->> '$.ConsumedUnit') similar to '.*minute.*' then 60 end
            as seconds_per_unit,
        source_file,
        record_no
    from source
    where try_cast(doc ->> '$.ChargePeriodStart' as timestamptz) is not null
      and try_cast(doc ->> '$.ChargePeriodEnd' as timestamptz)
          > try_cast(doc ->> '$.ChargePeriodStart' as timestamptz)
)

select * from final
