"""Everything a submission checks before a job is written: the registered slaves (storage,
ports, feasibility), the indexed request columns, idempotency keys, OpenPAI configs."""
