"""Human studies in Label Studio: labeling configs, client, push/pull, aggregation, apply.

``annotation.client`` is the only module that imports ``label_studio_sdk`` (lazily).
"""
