"""Repository functions: thin, typed queries and writes; every one takes ``*, session``.

Modules are named for what they hold: ``questions``, ``perturbations``, ``runs`` (model
specs, generation runs, responses), ``cache`` (LLM request cache), ``ontology``, ``labels``
(labeler specs, step labels), ``rounds`` (refinement rounds, rewrite proposals),
``annotations`` (Label Studio studies, tasks, annotators, annotations, curation votes),
``judges``, ``analyses``, ``meta``, ``lookup`` (a row by id, or ``NotFoundError``). They
never commit: the caller's session owns the transaction (they flush where ids are needed).
"""
