"""The gate: Great Expectations suites run on the landed and built tables (`run`), the suites
and their batches (`suites`), and the checks translated into DuckDB SQL (`pushdown`)."""
