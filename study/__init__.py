"""DriftLens study: curation, perturbation catalog, generation runs, analyses and exports."""
