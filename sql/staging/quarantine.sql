-- grain: one row per raw record that staging could not use, with the reason.
-- Together with the staging tables, this accounts for every landed raw row (checks/accounting).
-- Two parts: records whose own values do not cast (staging.quarantine_casts, kept between runs),
-- and workers whose endpoint no input names (staging.stg_runpod__worker_endpoints), which a file
-- landed later may name: that part is decided again every run, so that a worker tied by a later
-- day's job records is no longer reported. (Built whole every run: the casts' part is small.)
with unnamed as (
    -- every snapshot item of such a worker, with its file and locator
    select r.source_file, r.record_no, r.locator, e.reason, r.doc::varchar as record
    from raw.runpod_inventory r
    join staging.stg_runpod__worker_endpoints e on e.worker_id = r.doc ->> '$.id'
    where r.inventory_kind = 'workers' and r.endpoint_id is null and e.endpoint_id is null
),

final as (
    select * from staging.quarantine_casts
    union all
    select * from unnamed
)

select * from final
