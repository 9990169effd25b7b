"""The distributed mode: API nodes and workers sharing PostgreSQL (the run queue, checkpoints) and
Redis (events, cancels). Its modules load only when that mode is on (``saber.cluster.serving``)."""
