"""Labelers map reasoning steps to ontology leaves; every label records the labeler's spec."""
