-- grain: one row per landed invoice row (an invoice's total, service empty, or one of its line
-- items): typed. Landing checked every value (recon/ingest/invoices.py), so the casts hold; a date
-- without a time is 00:00 UTC, the start of that day. `service` NULL is the invoice's total.
with source as (
    select * from raw.invoice_lines
),

final as (
    select
        doc ->> '$.invoice_id' as invoice_id,
        doc ->> '$.issuer' as issuer,
        doc ->> '$.cost_center' as cost_center,
        doc ->> '$.currency' as currency,
        cast(doc ->> '$.billing_period_start' as timestamptz) as period_start,
        cast(doc ->> '$.billing_period_end' as timestamptz) as period_end,
        try_cast(doc ->> '$.issued_at' as timestamptz) as issued_at,
        coalesce(doc ->> '$.service', 'total') as service,
        doc ->> '$.resource_id' as resource_id,
        doc ->> '$.description' as description,
        cast(doc ->> '$.amount' as decimal(38, 12)) as amount,
        source_file,
        record_no,
        locator
    from source
)

select * from final
