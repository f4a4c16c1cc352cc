-- grain: one row per serverless worker session (endpoint_id, worker_id): from its start to its
-- last request done, then the idle timeout it is expected to stop after.
select endpoint_id, worker_id, day,
       make_timestamp(start_ms * 1000)::timestamptz as started_at, start_assumed,
       make_timestamp(first_submitted_ms * 1000)::timestamptz as first_submitted_at,
       make_timestamp(first_exec_ms * 1000)::timestamptz as first_exec_at,
       make_timestamp(last_done_ms * 1000)::timestamptz as last_done_at,
       jobs, cold_start_ms, execution_ms, between_ms, rounding_est_ms, idle_timeout_ms
from intermediate.int_serverless__worker_sessions
