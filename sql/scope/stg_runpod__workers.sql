-- grain: as staging.stg_runpod__workers, for the window: the workers of scope.window_workers
-- (int_serverless__worker_sessions takes their startedAt), read through the span of their rows
-- (meta.bounds__stg_runpod__workers, its `bounds` in sql/staging/_models.toml): joining every
-- worker of history would cost the sessions ~1.1 s at 24 M workers (bench/README.md).
with span as (
    select min(b.lo) as lo, max(b.hi) as hi
    from meta.bounds__stg_runpod__workers b
    semi join (select hash(endpoint_id, worker_id) as h from scope.window_workers) k using (h)
),

final as (
    select w.*
    from staging.stg_runpod__workers w
    cross join span s
    semi join scope.window_workers k
        on k.endpoint_id is not distinct from w.endpoint_id and k.worker_id = w.worker_id
    where w.last_seen_at >= s.lo and w.last_seen_at <= s.hi
    -- rows without last_seen_at, which no span covers, apart: an `or last_seen_at is null` in
    -- the filter above kept DuckDB from skipping row groups by the span (it read all 25 M);
    -- here row groups without nulls are skipped by their statistics
    union all
    select w.*
    from staging.stg_runpod__workers w
    semi join scope.window_workers k
        on k.endpoint_id is not distinct from w.endpoint_id and k.worker_id = w.worker_id
    where w.last_seen_at is null
)

select * from final
