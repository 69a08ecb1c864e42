"""Disposition drift instrument (seed 001): batteries, arms, generation, scoring, statistics."""
