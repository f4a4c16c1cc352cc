-- grain: as staging.stg_runpod__jobs (the columns read), for the window: every job of the workers of
-- scope.window_workers (a worker session's cold start, gaps and rounding span all its jobs).

-- every job of those workers completed in [lo, hi] (meta.bounds__stg_runpod__jobs, kept by the
-- staging build: its `bounds` in sql/staging/_models.toml): the scan below then skips the row
-- groups of other days instead of reading every job of history
with span as (
    select min(b.lo) as lo, max(b.hi) as hi
    from meta.bounds__stg_runpod__jobs b
    semi join (select hash(endpoint_id, worker_id) as h from scope.window_workers) k using (h)
),

-- Only the columns its readers take (int_serverless__worker_sessions; int_findings__serverless
-- adds job_id and status, named in its messages): a reader evaluates this view over the window's
-- ~2 M jobs and reads only the columns it names, but file names would be most of the bytes (a
-- reader needing another column fails to bind in every windowed test).
final as (
    select j.endpoint_id, j.job_id, j.worker_id, j.status, j.execution_ms, j.submitted_at, j.execution_started_at,
           j.completed_at
    from staging.stg_runpod__jobs j
    cross join span s
    semi join scope.window_workers k on k.endpoint_id is not distinct from j.endpoint_id and k.worker_id = j.worker_id
    where j.completed_at >= s.lo and j.completed_at <= s.hi
)

select * from final
