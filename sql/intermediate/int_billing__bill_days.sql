-- grain: one row per UTC day that holds a provider bill line of any kind (Runpod pod v1/v2,
-- serverless, network-volume or account lines, FOCUS charges): has the day's bill landed?
-- A bill is the account's, not a resource's: one pull of /v2/billing/pods for a window returns
-- every pod billed in it. So the day's bill has landed once any line of the day came from a
-- pull made at or after the day's end + bill_arrival_minutes (Runpod: "Invoices may take up to
-- 60 minutes to reflect new spending data", runpod/docs accounts-billing/cost-centers.mdx), or
-- from a file with no pull time (a saved v1 or FOCUS export, a response saved by hand: taken as
-- the bill as it was saved). A pull made before that holds the hours that had arrived by then,
-- not the day. A day with lifecycle data and no row here, or with `bill_landed` false, is
-- `awaiting_bill` in marts.settlement; on a day whose bill landed, a resource the bill has no
-- line for is `estimated` (and ACTIVITY_WITHOUT_BILLING).
with bill_lines as (
    select * from staging.stg_runpod__bill_lines
),

account_billing as (
    select * from staging.stg_runpod__account_billing
),

charges as (
    -- every day a FOCUS charge's period covers (a month-long row is on each of its days)
    select * from intermediate.int_focus__charge_days
),

lines as (
    select cast(date_trunc('day', bucket_start) as date) as day, pulled_at
    from bill_lines
    where bucket_start is not null
    union all
    select cast(date_trunc('day', bucket_start) as date), pulled_at
    from account_billing
    union all
    select day, null::timestamptz
    from charges
),

final as (
    select
        day,
        bool_or(pulled_at is null or pulled_at >= day::timestamptz + interval 1 day
                + to_minutes(cfg_int('bill_arrival_minutes'))) as bill_landed,
        count(*) as bill_lines,
        max(pulled_at) as last_pulled_at
    from lines
    group by day
)

select * from final
