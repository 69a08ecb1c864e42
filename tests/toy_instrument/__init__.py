"""A toy fifth instrument, written only under ``tests/`` (docs/adding-an-instrument.md).

"Coin" asks a model yes/no questions and measures the share of yes answers. It has the
shape of every instrument — items, plan, score, analysis, report, a human study kind, a
simulator preset, a CLI group and a page — and plugs into the workbench as an outside
package would: one plugin object (:data:`tests.toy_instrument.plugin.PLUGIN`) announced by
one entry point (:func:`tests.entry_points.installed_entry_points` puts it on the path), and
nothing outside ``tests/`` names it.
"""
