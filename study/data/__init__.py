"""Data shipped with the study package (sample questions)."""
