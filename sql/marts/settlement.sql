-- grain: one row per resource and day: how final its bill is. `awaiting_bill` (the day's bill
-- has not landed: intermediate.int_billing__bill_days; every resource of the day, priced as
-- billed so far, else from lifecycle × rate), `estimated` (the day's bill landed without a line
-- for this resource's observed work: priced from lifecycle × rate), `provisional`, `restated` (a
-- later pull changed it; see marts.restatements), `settled`. The worst state of a day's buckets
-- is the day's. `awaiting_bill` is the day's, `estimated` the resource's: a day with any
-- `awaiting_bill` row is not published (recon/published.py).
with bucket_states as (
    select * from intermediate.int_billing__bucket_states
),

resource_day as (
    select * from marts.resource_day
),

bill_days as (
    select * from intermediate.int_billing__bill_days
),

buckets as (
    select resource_id, resource_kind, day,
           count(*) as buckets,
           count(*) filter (where state = 'provisional') as provisional_buckets,
           count(*) filter (where state = 'restated') as restated_buckets,
           sum(first_amount) as first_pulled_amount,
           sum(latest_amount) as latest_amount,
           sum(restated_change) as restated_change,
           max(last_pulled_at) as last_pulled_at
    from bucket_states
    group by all
),

days as (
    select d.resource_id, d.resource_kind, d.day, d.billed_amount, d.expected_amount,
           b.buckets, b.provisional_buckets, b.restated_buckets, b.first_pulled_amount,
           b.latest_amount, b.restated_change, b.last_pulled_at,
           coalesce(l.bill_landed, false) as bill_landed
    from resource_day d
    left join buckets b using (resource_id, day)
    left join bill_days l using (day)
),

final as (
    select
        resource_id, resource_kind, day,
        case when not bill_landed then 'awaiting_bill'
             when billed_amount = 0 and coalesce(expected_amount, 0) > 0 then 'estimated'
             when restated_buckets > 0 then 'restated'
             when provisional_buckets > 0 then 'provisional'
             else 'settled' end as state,
        case when billed_amount = 0 and coalesce(expected_amount, 0) > 0 then expected_amount
             else billed_amount end as amount,
        coalesce(buckets, 0) as buckets,
        coalesce(provisional_buckets, 0) as provisional_buckets,
        coalesce(restated_buckets, 0) as restated_buckets,
        first_pulled_amount,
        coalesce(restated_change, 0) as restated_change,
        last_pulled_at
    from days
)

select * from final order by day, resource_id
