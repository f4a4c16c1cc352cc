-- grain: one row per network volume (/v2/network-volumes), latest snapshot.
with source as (
    select * from raw.runpod_inventory where inventory_kind = 'network_volumes'
),

final as (
    select
        doc ->> '$.id' as volume_id,
        doc ->> '$.name' as volume_name,
        try_cast(doc ->> '$.size' as bigint) as size_gb,
        doc ->> '$.type' as volume_type
    from source
    qualify row_number() over (partition by doc ->> '$.id'
                               -- then the file and its record: two snapshots of one pull
                               -- time would otherwise be kept by whichever the sort met first
                               order by try_cast(pulled_at as timestamptz) desc nulls last,
                                        source_file desc, record_no desc) = 1
)

select * from final
