"""Reasoning drift's commands on an executor (``--executor``; docs/cluster.md).

One coordinator per command over shards of questions, on :mod:`study.cluster`'s shared
machinery (shards, executors, the coordinated pass and its leases): :mod:`.generate`,
:mod:`.label` and :mod:`.judge`, and the out-of-core analysis's statistics per model
(:mod:`.analysis`).
"""
