-- grain: one row per GPU type and catalog pull (gpu_type_id, pulled_at): Runpod's list prices,
-- GET /v2/catalog/gpus (openapi-v2 `GpuType.price`: USD per hour for ONE GPU of the type; a
-- pod's rate is the figure of its cloud × gpu.count, a serverless worker's `serverless` × its
-- GPU count). The loader has checked each price is a non-negative number (recon/ingest/classify.py
-- `gpu_price`); a quarantined GPU has no row here.
--
-- Prices change, so each row is valid from its pull on: [valid_from, valid_to) runs from its
-- pull to the type's next pull, and the type's earliest pull also covers every moment before it
-- (valid_from -infinity): the price of a moment is the latest pull at or before it, else the
-- earliest one. A catalog saved without x_recon.pulledAt (the bare API answer) counts as pulled
-- before every dated one. Two rows of one type and pull time: the later file's, then record's.
with source as (
    select * from raw.runpod_inventory where inventory_kind = 'gpu_catalog'
),

prices as (
    select
        doc ->> '$.id' as gpu_type_id,
        doc ->> '$.name' as gpu_name,
        doc ->> '$.pool' as pool,
        try_cast(doc ->> '$.price.secure' as decimal(38, 12)) as secure_usd_per_gpu_hour,
        try_cast(doc ->> '$.price.community' as decimal(38, 12)) as community_usd_per_gpu_hour,
        -- absent when the GPU is in no serverless pool available to the caller
        try_cast(doc ->> '$.price.serverless' as decimal(38, 12)) as serverless_usd_per_gpu_hour,
        try_cast(pulled_at as timestamptz) as pulled_at,
        coalesce(try_cast(pulled_at as timestamptz), '-infinity'::timestamptz) as pulled_key,
        source_file,
        record_no
    from source
    qualify row_number() over (partition by doc ->> '$.id', pulled_key
                               order by source_file desc, record_no desc) = 1
),

final as (
    select
        gpu_type_id, gpu_name, pool,
        secure_usd_per_gpu_hour, community_usd_per_gpu_hour, serverless_usd_per_gpu_hour,
        pulled_at,
        case when row_number() over (partition by gpu_type_id order by pulled_key) = 1
             then '-infinity'::timestamptz else pulled_key end as valid_from,
        coalesce(lead(pulled_key) over (partition by gpu_type_id order by pulled_key),
                 'infinity'::timestamptz) as valid_to,
        source_file,
        record_no
    from prices
)

select * from final
