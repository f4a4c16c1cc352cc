-- grain: one row per billed Runpod resource and UTC day: its billed compute at Runpod's list
-- prices (intermediate.int_runpod__list_amounts holds the rules). The FOCUS export's ListCost
-- and ListUnitPrice come from here; marts.resource_day keeps the contracted side.
with list_amounts as (
    select * from intermediate.int_runpod__list_amounts
),

final as (
    select
        resource_id, resource_kind, day, price_basis, gpu_type, gpu_count, cloud_assumed,
        priced_seconds, list_usd_per_gpu_hour, price_pulled_at, list_amount
    from list_amounts
)

select * from final
