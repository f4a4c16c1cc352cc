-- grain: as staging.stg_runpod__serverless_billing, for the window's buckets.
with final as (
    select b.* from staging.stg_runpod__serverless_billing b cross join scope.window w
    where b.bucket_start < w.hi and b.bucket_end > w.lo
)

select * from final
