-- grain: one row per resource and day: how final its bill is. `estimated` (work observed, no
-- bill yet: priced from lifecycle × rate), `provisional`, `restated` (a later pull changed it;
-- see marts.restatements), `settled`. The worst state of a day's buckets is the day's.
with buckets as (
    select resource_id, resource_kind, day,
           count(*) as buckets,
           count(*) filter (where state = 'provisional') as provisional_buckets,
           count(*) filter (where state = 'restated') as restated_buckets,
           sum(first_amount) as first_pulled_amount,
           sum(latest_amount) as latest_amount,
           sum(restated_change) as restated_change,
           max(last_pulled_at) as last_pulled_at
    from intermediate.int_billing__bucket_states
    group by all
),

days as (
    select d.resource_id, d.resource_kind, d.day, d.billed_amount, d.expected_amount,
           b.buckets, b.provisional_buckets, b.restated_buckets, b.first_pulled_amount,
           b.latest_amount, b.restated_change, b.last_pulled_at
    from marts.resource_day d
    left join buckets b using (resource_id, day)
),

final as (
    select
        resource_id, resource_kind, day,
        case when billed_amount = 0 and coalesce(expected_amount, 0) > 0 then 'estimated'
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
