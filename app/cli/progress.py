"""A rich progress bar exposed as the ``(done, total)`` callback the services accept.

Each bar is also a stage of the command's job row (:mod:`app.cli.job_hooks`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from app.cli.console import SafeConsole
from app.cli.job_hooks import report_progress, report_stage


class RateColumn(ProgressColumn):
    """Items per second over the run so far."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("?/s" if speed is None else f"{speed:.1f}/s", style="progress.data.speed")


@contextmanager
def progress_callback(
    description: str, *, rate: bool = False
) -> Iterator[Callable[[int, int], None]]:
    """Yield ``update(done, total)``; the bar shows count, elapsed time and an ETA.

    Args:
        description: The bar's label.
        rate: Also show items per second, and label the ETA (``driftlens generate``).
    """
    console = SafeConsole(stderr=True)
    columns: list[ProgressColumn] = [
        TextColumn("{task.description}", style="bold", markup=False),  # names stay text
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
    ]
    if rate:
        columns += [RateColumn(), TimeElapsedColumn(), TextColumn("ETA")]
    else:
        columns += [TimeElapsedColumn()]
    columns.append(TimeRemainingColumn())
    with Progress(
        *columns,
        console=console,
        transient=False,
        disable=not console.is_terminal,
    ) as bar:
        task = bar.add_task(description, total=None)
        report_stage(description)  # a job's row says what runs before the first unit

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
            report_progress(done, total)

        yield update
