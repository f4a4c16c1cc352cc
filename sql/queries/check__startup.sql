-- `recon check`, step 2: the GPU pods that became ready on the day (parameter: the day) and the
-- slowest one's startup seconds.
select count(*), max(epoch(ready_at) - epoch(started_at))
from marts.workload_lifecycle
where gpus > 0 and ready_at is not null and started_at::date = ?
