"""Shipped sample batteries written by us, and loaders for formats users bring."""
