"""The gate: Great Expectations suites run on the landed and built tables (`run`), the suites
and their batches (`suites`), each expectation translated into DuckDB SQL (`checks`), and those
checks run on large tables (`pushdown`)."""
