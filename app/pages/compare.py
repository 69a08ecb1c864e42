"""Compare: two or more runs of one instrument, paired on the items they share.

Pick the instrument and the runs (the address bar keeps both, so a view can be linked), see
the paired table and the forest plot, then the items sorted by how much the runs differ,
each opened side by side with the difference highlighted. Downloads: the whole report
(HTML, Markdown, JSON, figures, tables) and the per-item table.

The page calls the compare service (:func:`study.compare.compare_runs`) with a typed
:class:`~study.compare.request.CompareRequest`; only a big comparison (many pairs or
replicates) runs as a background job of the same service, so the page stays responsive.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import streamlit as st

from app.ui.checked_input import FormCheck
from app.ui.db import page_session, page_settings
from app.ui.job_panel import job_panel, start_study_job
from app.ui.page_stop import stop_with_info
from app.ui.safe import escape_markdown, show_plain
from app.ui.table_downloads import table_downloads
from app.ui.url_state import url_multiselect, url_select
from app.ui.word_diff import diff_html
from storage.errors import DriftLensError
from study.compare import (
    CompareOptions,
    Comparison,
    adapter_names,
    compare_runs,
    data_revision,
    get_adapter,
    parse_margin,
    run_choices,
)
from study.compare.forest import forest_figure
from study.compare.report import SIMULATED_NOTE, write_comparison_report
from study.compare.request import (
    JOB,
    KIND,
    RUNNER,
    CompareRequest,
    job_folder,
    read_job_comparison,
)
from study.downloads import folder_zip
from study.jobs import list_jobs

# The paired test is shown with its BH-adjusted p (the family the verdict's bootstrap p
# is adjusted in) and its detail (ties, discordant pairs, the exact p beside a mid-p): a
# bare unadjusted p next to adjusted ones reads as the one that decides.
_TABLE_COLUMNS = ["run_a", "run_b", "statistic", "scope", "value_a", "value_b", "diff",
                  "ci_low", "ci_high", "p_adjusted", "test", "p_test", "p_test_adjusted",
                  "test_detail", "mdd", "margin", "n_items", "verdict"]  # fmt: skip

st.title("Compare runs")
st.caption(
    "Paired differences (B − A) on the items both runs answered, with an item-cluster "
    "bootstrap interval, the exact paired test, Benjamini–Hochberg over the whole table and an "
    "equivalence test; three or more runs get letters (runs sharing one cannot be separated)."
)

with page_session() as session:
    instrument = url_select("Instrument", list(adapter_names()), param="instrument")
    assert instrument is not None
    labeler = None
    offered = get_adapter(instrument).labelers(session=session)
    if offered is not None:  # runs compared under one labeler's step labels
        labeler = url_select("Labeler", offered, param="labeler")
    runs = url_multiselect(
        "Runs (two or more)", run_choices(instrument, session=session), param="run", what="run"
    )
    left, right = st.columns(2)
    form = FormCheck()
    n_boot = form.number("Bootstrap replicates", low=200, high=20_000, value=1000, step=200,
                         key="cmp-B", where=left)  # fmt: skip
    margin_text = right.text_input(
        "Equivalence margin", "", help="Blank: the instrument's default; 'mdd': each row's MDD."
    )
    if len(runs) < 2:
        stop_with_info("Pick at least two runs to compare.")
    if not form.ok:
        st.stop()  # the refused value is said under its box: no comparison runs with another
    try:  # parsed once, here: the service gets a typed request (a bad margin said here)
        margin = parse_margin(margin_text.strip() or None)
        options = CompareOptions(labeler=labeler, margin=margin, n_boot=n_boot, top_items=50)
        request = CompareRequest(runs=tuple(runs), instrument=instrument, options=options)
    except DriftLensError as exc:
        show_plain(exc)
        st.stop()
    revision = data_revision(session=session)
key = request.key(revision)
folder = job_folder(page_settings().workspace, key)
cached = st.session_state.get("compare::result")
result: Comparison | None = cached[1] if cached and cached[0] == key else None
if result is None and request.inline:
    # Small (pairs x replicates within INLINE_MAX_WORK): the service, called directly.
    try:
        with page_session() as session, st.spinner("Comparing the runs…"):
            result = compare_runs(request.runs, instrument=request.instrument, session=session,
                                  options=request.options)  # fmt: skip
    except DriftLensError as exc:
        show_plain(exc)
        st.stop()
    st.session_state["compare::result"] = (key, result)
elif result is None:
    # Big: the same service as a background job, into a folder keyed by the request and
    # the data revision (new data is a new key, never a stale result); the page stays free.
    scope = {"compare": key}
    panel = job_panel(kind=KIND, scope=scope, key="compare")
    if panel.busy is None:
        result = read_job_comparison(folder)
        if result is not None:
            st.session_state["compare::result"] = (key, result)
        else:
            with page_session() as session:
                tried = list_jobs(session=session, kind=KIND, scope=scope, limit=1)
            # A failed or cancelled one shows its error and Resume above; it is not restarted.
            if not tried and start_study_job(key="compare", runner=RUNNER, job=JOB,
                                             args={"request": request.to_args(), "digest": key},
                                             title=request.title, scope=scope):  # fmt: skip
                st.rerun()
if result is None:  # the job runs (the panel shows it) or stopped (its error shows)
    st.stop()
shown: Comparison = result
if result.simulated:
    st.error(SIMULATED_NOTE)
st.markdown(f"**{escape_markdown(result.headline)}** · {escape_markdown(result.margin_note)}")
from study.compare import matching_lines  # noqa: E402 (after the guard: a cheap import)

for line in matching_lines(result):
    st.caption(escape_markdown(line))

st.subheader("Paired table")
st.dataframe(result.table()[_TABLE_COLUMNS], hide_index=True, width="stretch")
st.pyplot(forest_figure(result), clear_figure=False)
if result.ranking:
    st.subheader("Ranking")
    st.dataframe(
        [
            {
                "statistic": r.statistic,
                "scope": r.scope,
                "run": r.run,
                "value": r.value,
                "letters": r.letters,
            }
            for r in result.ranking
        ],
        hide_index=True,
    )

st.subheader("Items that differ most")
items = list(result.items)
if not items:
    st.info("The runs agree on every shared item.")
else:
    labels = {i: f"{it.item} · {it.run_a} vs {it.run_b} · {it.score:.3f}" for i, it in
              enumerate(items)}  # fmt: skip
    pick = url_select(
        "Item", list(labels), param="item", format_func=lambda i: labels[i],
        to_param=lambda i: items[i].item, what="item",
    )  # fmt: skip
    if pick is not None:
        it = items[pick]
        st.caption(escape_markdown(it.detail))
        a, b = st.columns(2)
        with a:
            st.markdown(f"**{escape_markdown(it.run_a)}**")
            st.markdown(diff_html(it.text_a, it.text_b, side="old"), unsafe_allow_html=True)
        with b:
            st.markdown(f"**{escape_markdown(it.run_b)}**")
            st.markdown(diff_html(it.text_a, it.text_b, side="new"), unsafe_allow_html=True)

st.subheader("Downloads")
table_downloads("Per-item table", result.items_table, file_stem="compare-items", key="cmp-items")
table_downloads("Paired table", result.table, file_stem="compare-paired", key="cmp-paired")


def _report_zip(comparison: Comparison) -> bytes:
    if (folder / "comparison").is_dir():  # a job wrote it with the comparison
        return folder_zip(folder / "comparison")
    with tempfile.TemporaryDirectory() as tmp:
        written = Path(tmp) / "comparison"
        write_comparison_report(comparison, written)
        return folder_zip(written)


st.download_button(
    "Report (.zip)",
    data=lambda: _report_zip(shown),
    file_name="comparison.zip",
    mime="application/zip",
    key="cmp-report",
    on_click="ignore",  # a download needs no rerun of the page
)
