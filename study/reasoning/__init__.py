"""Reasoning drift: the first instrument (step trajectories compared with a baseline).

Its own modules live here, those it was first to need included; what two or more
instruments share (questions, the catalog and its context families, prompts, the run
set-up, strict-JSON judge plumbing, the report kit, downloads) stays in :mod:`study`'s root.

* :mod:`study.reasoning.generation` — resumable generation runs (baseline + perturbed);
* :mod:`study.reasoning.judges` — the response judge (helpfulness, distraction, acknowledgement);
* :mod:`study.reasoning.exports` / :mod:`study.reasoning.browse` — JSONL exports, app views;
* :mod:`study.reasoning.demo` — the whole pipeline on the embedded default, offline;
* :mod:`study.reasoning.sim` — its simulator (stepped answers with known drift, tasks);
* :mod:`study.reasoning.trajectories` — label a run's steps, read trajectories back;
* :mod:`study.reasoning.drift` — every response's trajectory against its baseline;
* :mod:`study.reasoning.drift_files` — the pair table as ``drift.csv`` / ``pairs.csv`` rows;
* :mod:`study.reasoning.stats_table` — read and validate a drift table for the statistics;
* :mod:`study.reasoning.analysis` — one run's analysis: drift table → statistics → report;
* :mod:`study.reasoning.examples` — the example response pairs a report shows;
* :mod:`study.reasoning.provenance` — what produced an analysis's numbers;
* :mod:`study.reasoning.stored` — stored analyses read back for display;
* :mod:`study.reasoning.preferences` — DPO preference pairs from judged responses.
"""
