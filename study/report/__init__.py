"""The report kit every instrument's report is written with; it names no instrument.

* :mod:`study.report.html` — self-contained HTML: the policy, the style sheet, escaping,
  tables and embedded figures;
* :mod:`study.report.markdown` — Markdown escaping, tables and fenced JSON;
* :mod:`study.report.cells` — table columns and the number formatting both renderers share;
* :mod:`study.report.figures` — matplotlib figures on an explicit Agg canvas, saved as SVG
  and PNG, and safe labels for untrusted names;
* :mod:`study.report.folder` — report folders replaced as a whole.

Each instrument's own report (its sections, tables and figures) lives in its folder, e.g.
reasoning drift's in :mod:`study.reasoning.report`.
"""
