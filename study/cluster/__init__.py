"""Running a study's work on several processes or machines (issue 24, docs/cluster.md).

A command's plan is cut into shards of work units keyed by their natural ids (a shard is a
set of questions: every condition and sample of those questions), and an executor runs the
shards: :class:`~study.cluster.executors.LocalExecutor` one after another in this process,
:mod:`study.cluster.ray_executor` as Ray tasks on a cluster (the only module importing
``ray``). Each task opens its own session on the shared database and builds its own
backend; the coordinator holds the run-level lease, each shard a lease below it
(``storage.repo.leases``), and every row goes through the existing idempotent upserts, so a
shard retried after its worker died stores nothing twice.
"""
