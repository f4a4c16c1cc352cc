-- grain: one row per FOCUS cost-and-usage row (source_file, record_no). Renames and casts, and
-- what kind of charge the row is (is_instance_compute).
-- resource_key is the last segment of ResourceId (an ARN, a GCP/Azure resource path or a bare
-- id), the same rule that maps a node's spec.providerID; NULL when the row names no resource
-- (landing reads the literal `NULL` the FOCUS sample files write as a null, recon/ingest/focus.py).
--
-- Periods: landing quarantines a row whose ChargePeriodStart/End is not a FOCUS date/time or
-- whose period is empty (recon/ingest/focus.py FOCUS_DATETIME); the same pattern guards the casts
-- here, so a value such as `4/1/25` never casts to the year 4. A time ending in ` UTC` (BigQuery's
-- TIMESTAMP in a CSV extract, the way Google Cloud's FOCUS export reaches a file) casts as UTC.
--
-- Units follow the FOCUS Unit Format (FOCUS_Spec specification/attributes/unit_format.md): a
-- compound unit joins base units with "-" ("GB-Hours", "vCPU-Hours", "Lambda-GB-Seconds"), a ratio
-- unit with "/" ("Units/Hour", "GiB/Second-Months"); neither is a duration. Only a simple unit
-- whose one base unit is time ("Hours", "1 Hour", "Seconds"; AWS's "Hrs") measures time, and
-- consumed_unit_seconds is the seconds of one such unit, else NULL. "Instance-Hours" and
-- "Node-Hours" are one instance's hours on a row that names one resource (the unit of GPU clouds'
-- instance usage: CoreWeave meters GPU and CPU compute in "instance-hours",
-- docs.coreweave.com/billing/billing-insights "Usage by resource type"); "GPU-Hours" is no
-- duration (it is hours times GPUs).
--
-- usage_only: the file bills nothing for the row, it counts usage: BilledCost empty (landing
-- keeps such a row only with a ConsumedQuantity or PricingQuantity, recon/ingest/focus.py), or a
-- Usage row whose cost columns are all 0 or empty for a positive quantity (an export that writes
-- 0 for "not priced here"). A commitment's covered usage (BilledCost 0, EffectiveCost > 0) is
-- priced, so not usage-only. int_focus__charge_days prices usage-only rows from the rate card.
--
-- is_instance_compute: the row is billed time of one instance (a VM, a GPU pod): a Usage row of
-- ServiceCategory Compute (or whose SkuId or ChargeDescription matches one of
-- mapping.focus_compute_sku_patterns) on a resource, consumed in a duration. Those rows take part in the
-- lifecycle reconciliation; every other row (storage, networking, databases, serverless compute
-- in GB-seconds, SaaS, purchases, taxes, credits) is carried through as another charge.
with source as (
    select * from raw.focus_rows
),

typed as (
    select
        *,
        regexp_full_match(doc ->> '$.ChargePeriodStart', '[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?(?:Z|[+-][0-9]{2}:?[0-9]{2}| UTC)?|(?:Z|[+-][0-9]{2}:?[0-9]{2})?)') as start_ok,
        regexp_full_match(doc ->> '$.ChargePeriodEnd', '[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?(?:Z|[+-][0-9]{2}:?[0-9]{2}| UTC)?|(?:Z|[+-][0-9]{2}:?[0-9]{2})?)') as end_ok,
        regexp_extract(lower(trim(doc ->> '$.ConsumedUnit')),
                       '^(?:([0-9]+) +)?(?:(?:instance|node)[- ])?(hours?|hrs?|minutes?|seconds?|milliseconds?|days?)$',
                       ['qty', 'base']) as unit_parts,
        regexp_extract(lower(trim(doc ->> '$.PricingUnit')),
                       '^(?:([0-9]+) +)?(?:(?:instance|node)[- ])?(hours?|hrs?|minutes?|seconds?|milliseconds?|days?)$',
                       ['qty', 'base']) as pricing_unit_parts
    from source
),

final as (
    select
        doc ->> '$.ResourceId' as resource_id_raw,
        -- an Azure resource id's name in lower case: Azure resource names are case-insensitive
        -- ("Always perform a case-insensitive comparison of names", learn.microsoft.com
        -- azure-resource-manager/management/resource-name-rules), and cost exports and
        -- spec.providerID spell them differently (int_k8s__node_resources does the same)
        case when lower(doc ->> '$.ResourceId') like '/subscriptions/%'
             then lower(regexp_extract(doc ->> '$.ResourceId', '([^/:]+)/*$', 1))
             else regexp_extract(doc ->> '$.ResourceId', '([^/:]+)/*$', 1) end as resource_key,
        doc ->> '$.ResourceName' as resource_name,
        doc ->> '$.ResourceType' as resource_type,
        try_cast(doc ->> '$.ChargePeriodStart' as timestamptz) as charge_start,
        try_cast(doc ->> '$.ChargePeriodEnd' as timestamptz) as charge_end,
        doc ->> '$.ChargeCategory' as charge_category,
        doc ->> '$.ChargeClass' as charge_class,
        doc ->> '$.ChargeDescription' as charge_description,
        doc ->> '$.ChargeFrequency' as charge_frequency,
        doc ->> '$.ServiceCategory' as service_category,
        doc ->> '$.ServiceSubcategory' as service_subcategory,
        doc ->> '$.ServiceName' as service_name,
        doc ->> '$.SkuId' as sku_id,
        doc ->> '$.SkuPriceId' as sku_price_id,
        try_cast(doc ->> '$.BilledCost' as decimal(38, 12)) as billed_cost,
        try_cast(doc ->> '$.EffectiveCost' as decimal(38, 12)) as effective_cost,
        try_cast(doc ->> '$.ListCost' as decimal(38, 12)) as list_cost,
        try_cast(doc ->> '$.ContractedCost' as decimal(38, 12)) as contracted_cost,
        try_cast(doc ->> '$.ConsumedQuantity' as decimal(38, 12)) as consumed_quantity,
        doc ->> '$.ConsumedUnit' as consumed_unit,
        try_cast(doc ->> '$.PricingQuantity' as decimal(38, 12)) as pricing_quantity,
        doc ->> '$.PricingUnit' as pricing_unit,
        try_cast(doc ->> '$.ContractedUnitPrice' as decimal(38, 12)) as contracted_unit_price,
        try_cast(doc ->> '$.ListUnitPrice' as decimal(38, 12)) as list_unit_price,
        doc ->> '$.CommitmentDiscountId' as commitment_discount_id,
        doc ->> '$.CommitmentDiscountStatus' as commitment_discount_status,
        doc ->> '$.CommitmentDiscountCategory' as commitment_discount_category,
        doc ->> '$.CommitmentDiscountName' as commitment_discount_name,
        doc ->> '$.CommitmentDiscountType' as commitment_discount_type,
        try_cast(doc ->> '$.CommitmentDiscountQuantity' as decimal(38, 12)) as commitment_discount_quantity,
        doc ->> '$.CommitmentDiscountUnit' as commitment_discount_unit,
        doc ->> '$.SkuMeter' as sku_meter,
        doc ->> '$.SkuPriceDetails' as sku_price_details,
        -- FOCUS 1.3 deprecates ProviderName and PublisherName for ServiceProviderName
        -- (FOCUS_Spec columns/providername.md "Deprecated (version) 1.3 Replaced by
        -- ServiceProviderName"; publishername.md "Deprecated (version) 1.3"): a file without
        -- them names its provider there
        -- FOCUS 0.5 named the columns Provider, Publisher, InvoiceIssuer and Region (FOCUS_Spec
        -- columns/region.md "Column ID Region ... Introduced (version) 0.5"), and OCI's FOCUS
        -- reports still do (oracle-samples/usage-reports-to-adw focus2adw/focus2adw.py reads
        -- 'Provider', 'Publisher', 'InvoiceIssuer' and "'Region' ... In OCI as Region and not
        -- RegionId"): a file without the later names names them there
        coalesce(doc ->> '$.ProviderName', doc ->> '$.ServiceProviderName', doc ->> '$.Provider')
            as provider_name,
        coalesce(doc ->> '$.PublisherName', doc ->> '$.ServiceProviderName', doc ->> '$.Publisher')
            as publisher_name,
        -- FOCUS 1.3's own names, NULL in a 1.2 file: the FOCUS 1.3 export writes them back
        -- (a marketplace seller and the cloud hosting it are two entities there)
        doc ->> '$.ServiceProviderName' as service_provider_name,
        doc ->> '$.HostProviderName' as host_provider_name,
        coalesce(doc ->> '$.InvoiceIssuerName', doc ->> '$.InvoiceIssuer') as invoice_issuer_name,
        doc ->> '$.InvoiceId' as invoice_id,
        doc ->> '$.BillingAccountId' as billing_account_id,
        doc ->> '$.BillingAccountName' as billing_account_name,
        doc ->> '$.SubAccountId' as sub_account_id,
        coalesce(doc ->> '$.RegionId', doc ->> '$.Region') as region_id,
        doc ->> '$.BillingCurrency' as billing_currency,
        -- seconds of one consumed (pricing) unit when the unit is a duration (see the header)
        case regexp_replace(unit_parts.base, 's$', '')
             when 'hour' then 3600 when 'hr' then 3600 when 'minute' then 60 when 'second' then 1
             when 'millisecond' then 0.001 when 'day' then 86400
        end * coalesce(nullif(unit_parts.qty, '')::bigint, 1) as consumed_unit_seconds,
        case regexp_replace(pricing_unit_parts.base, 's$', '')
             when 'hour' then 3600 when 'hr' then 3600 when 'minute' then 60 when 'second' then 1
             when 'millisecond' then 0.001 when 'day' then 86400
        end * coalesce(nullif(pricing_unit_parts.qty, '')::bigint, 1) as pricing_unit_seconds,
        coalesce(doc ->> '$.ChargeCategory' = 'Usage'
                 and (doc ->> '$.ServiceCategory' = 'Compute'
                      or list_bool_or(list_transform(
                             (select cast(json(value) ->> '$[*]' as varchar[]) from config.settings
                               where name = 'focus_compute_sku_patterns'),
                             lambda p: regexp_matches(coalesce(doc ->> '$.SkuId', ''), p)
                                       or regexp_matches(coalesce(doc ->> '$.ChargeDescription', ''), p))))
                 and doc ->> '$.ResourceId' is not null
                 -- ConsumedUnit is conditional in FOCUS: without one, the PricingUnit says
                 and (unit_parts.base <> ''
                      or doc ->> '$.ConsumedUnit' is null and pricing_unit_parts.base <> ''), false)
            as is_instance_compute,
        coalesce(doc ->> '$.BilledCost' is null
                 or doc ->> '$.ChargeCategory' = 'Usage'
                    and try_cast(doc ->> '$.BilledCost' as decimal(38, 12)) = 0
                    and coalesce(try_cast(doc ->> '$.EffectiveCost' as decimal(38, 12)), 0) = 0
                    and coalesce(try_cast(doc ->> '$.ListCost' as decimal(38, 12)), 0) = 0
                    and coalesce(try_cast(doc ->> '$.ContractedCost' as decimal(38, 12)), 0) = 0
                    and coalesce(try_cast(doc ->> '$.ConsumedQuantity' as decimal(38, 12)),
                                 try_cast(doc ->> '$.PricingQuantity' as decimal(38, 12))) > 0, false)
            as usage_only,
        source_file,
        record_no
    from typed
    where start_ok and end_ok
      and try_cast(doc ->> '$.ChargePeriodEnd' as timestamptz) > try_cast(doc ->> '$.ChargePeriodStart' as timestamptz)
)

select * from final
