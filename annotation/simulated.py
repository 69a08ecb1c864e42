"""A simulated annotator pool on an in-process Label Studio: human studies offline, known noise.

Known-dose evidence for anything computed from human labels needs people whose answers
are known: the simulator's truth of each item, plus noise of a known size. Two parts:

* :class:`OfflineLabelStudio` — an in-memory stand-in for the Label Studio server with the
  client's interface, so ``ensure_project``, ``push`` and ``pull`` (:mod:`annotation.sync`)
  run *unchanged* against it: the pool's answers reach the workspace through the same
  upsert, aggregation and apply path as a real server's (and a real-server end-to-end test
  exercises the identical code beyond the client);
* :class:`AnnotatorPool` — ``k`` annotators who answer every task of a project with the
  truth an instrument registered for its study (:func:`register_truth`), each vote moved
  one level up or down the ordinal scale with probability ``flip`` (a nominal answer is
  replaced by another value), and a lead time above the aggregation's minimum.

The expected vote (:meth:`AnnotatorPool.expected_vote`) is exact: the truth on the inside
of an ordinal scale (a move up is as likely as one down), pulled half a ``flip`` inward at
its ends (a move off the scale keeps the truth). A bench's "true value" for calibrated
estimates is the mean expected vote, what the people would say on average.

``annotation`` names no instrument: each instrument registers its studies' truth from
its own ``study/<instrument>/human/`` package.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from annotation.client import (
    LabelStudioClient,
    LabelStudioConnection,
    LsAnnotation,
    LsProject,
    LsTask,
    LsUser,
)
from annotation.kinds import get_spec
from annotation.studies import StudySpec
from storage.errors import InputError, NotFoundError

#: ``task data -> {question: true value}`` (omit a question to leave it unanswered).
TruthOf = Callable[[Mapping[str, Any]], Mapping[str, str]]

_TRUTH: dict[str, TruthOf] = {}

OFFLINE_URL = "offline://simulated-annotators"


def register_truth(study: str, truth: TruthOf) -> None:
    """Register how the simulator's truth of one study's task is read off its data."""
    _TRUTH[study] = truth


def truth_of(study: str) -> TruthOf:
    """The registered truth of a study.

    Raises:
        InputError: the study has no simulated truth.
    """
    get_spec(study)  # loads the instruments' kinds, which register their truths
    try:
        return _TRUTH[study]
    except KeyError:
        raise InputError(
            f"Study {study} has no simulated truth; the annotator pool cannot answer it."
        ) from None


@dataclass
class _Project:
    project: LsProject
    tasks: list[LsTask] = field(default_factory=list)


class OfflineLabelStudio(LabelStudioClient):
    """An in-memory Label Studio with the client's interface (projects, tasks, annotations)."""

    def __init__(self, url: str = OFFLINE_URL) -> None:
        super().__init__(LabelStudioConnection(url=url, api_key="offline", source="offline"))
        self._projects: dict[int, _Project] = {}
        self._users: dict[int, LsUser] = {}
        self._next = {"project": 1, "task": 1, "annotation": 1, "user": 1}

    def _id(self, what: str) -> int:
        value = self._next[what]
        self._next[what] += 1
        return value

    def _project(self, project_id: int) -> _Project:
        try:
            return self._projects[project_id]
        except KeyError:
            raise NotFoundError(f"Project {project_id} does not exist.") from None

    def check(self) -> str:
        """The stand-in is always up."""
        return "offline"

    def create_project(
        self, *, title: str, description: str, label_config: str, instructions: str
    ) -> LsProject:
        """Create an empty project."""
        pid = self._id("project")
        self._projects[pid] = _Project(LsProject(pid, title, 0, 0, 0, label_config))
        return self.get_project(pid)

    def get_project(self, project_id: int) -> LsProject:
        """A project with its counters."""
        p = self._project(project_id)
        done = sum(1 for t in p.tasks if t.annotations)
        total = sum(len(t.annotations) for t in p.tasks)
        return LsProject(
            project_id, p.project.title, len(p.tasks), done, total, p.project.label_config
        )

    def update_label_config(self, project_id: int, label_config: str) -> None:
        """Replace a project's labeling config."""
        p = self._project(project_id)
        p.project = LsProject(project_id, p.project.title, 0, 0, 0, label_config)

    def list_tasks(self, project_id: int) -> list[LsTask]:
        """Every task with its annotations."""
        return list(self._project(project_id).tasks)

    def import_tasks(self, project_id: int, tasks: Sequence[Mapping[str, Any]]) -> int:
        """Import task data objects."""
        p = self._project(project_id)
        for data in tasks:
            p.tasks.append(LsTask(self._id("task"), dict(data), ()))
        return len(tasks)

    def create_annotation(
        self,
        task_id: int,
        *,
        result: Sequence[Mapping[str, Any]],
        completed_by: int | None = None,
        lead_time: float | None = None,
    ) -> int:
        """Add an annotation to a task."""
        now = datetime.now(UTC)
        for p in self._projects.values():
            for i, t in enumerate(p.tasks):
                if t.id != task_id:
                    continue
                aid = self._id("annotation")
                ann = LsAnnotation(
                    aid, task_id, completed_by, [dict(r) for r in result], lead_time,
                    now, now, False, {},
                )  # fmt: skip
                p.tasks[i] = LsTask(t.id, t.data, (*t.annotations, ann))
                return aid
        raise NotFoundError(f"Task {task_id} does not exist.")

    def list_users(self) -> list[LsUser]:
        """Every user."""
        return list(self._users.values())

    def create_user(self, *, email: str, username: str, first_name: str = "") -> LsUser:
        """Create a user."""
        uid = self._id("user")
        self._users[uid] = LsUser(uid, email, username)
        return self._users[uid]


@dataclass(frozen=True)
class AnnotatorPool:
    """Simulated annotators: the simulator's truth with a known share of one-level slips.

    Attributes:
        annotators: Votes per task (each by a different annotator).
        flip: Probability that a vote moves one level up or down the ordinal scale (equally
            likely; a move off the scale keeps the truth), or is replaced by another value
            on a nominal question.
        seed: Seed of every vote.
        lead_time: Seconds per annotation (above the aggregation's 10 s minimum).
    """

    annotators: int = 2
    flip: float = 0.2
    seed: int = 0
    lead_time: float = 40.0

    def __post_init__(self) -> None:
        if self.annotators < 1 or not 0.0 <= self.flip <= 1.0:
            raise ValueError("an annotator pool needs at least one annotator and flip in [0, 1]")

    def vote(self, truth: str, values: Sequence[str], *, ordinal: bool, rng: random.Random) -> str:
        """One annotator's answer to a question whose true value is ``truth``."""
        if truth not in values or rng.random() >= self.flip:
            return truth  # an answer off the scale (n/a) is given as it is
        if not ordinal:
            others = [v for v in values if v != truth]
            return rng.choice(others) if others else truth
        scale = list(values)
        j = scale.index(truth) + (1 if rng.random() < 0.5 else -1)
        return scale[j] if 0 <= j < len(scale) else truth

    def expected_vote(self, level: int, n_levels: int) -> float:
        """The exact expected level index of a vote on an ordinal scale whose truth is ``level``."""
        up = self.flip / 2 if level < n_levels - 1 else 0.0
        down = self.flip / 2 if level > 0 else 0.0
        return level + up - down

    def annotate(self, client: OfflineLabelStudio, study: str, project_id: int) -> int:
        """Answer every task of the study's project that has no annotation yet.

        Returns:
            How many annotations were made.

        Raises:
            InputError: the study has no registered truth.
        """
        spec = get_spec(study)
        truth_fn = truth_of(study)
        users = self._users(client)
        made = 0
        for task in client.list_tasks(project_id):
            if task.annotations:
                continue
            truth = truth_fn(task.data)
            key = str(task.data.get("external_key", task.id))
            for a, user in enumerate(users):
                rng = random.Random(f"{self.seed}:{key}:{a}")
                answers = {
                    q.name: self.vote(
                        truth[q.name],
                        [v for v in q.values if v != q.not_applicable],
                        ordinal=_ordinal(spec, q.name),
                        rng=rng,
                    )
                    for q in spec.questions
                    if q.name in truth
                }
                client.create_annotation(
                    task.id,
                    result=_choices(answers),
                    completed_by=user.id,
                    lead_time=self.lead_time,
                )
                made += 1
        return made

    def _users(self, client: OfflineLabelStudio) -> list[LsUser]:
        have = {u.email: u for u in client.list_users()}
        out = []
        for a in range(self.annotators):
            email = f"simulated-{a + 1}@annotators.invalid"
            out.append(have.get(email) or client.create_user(email=email, username=email))
        return out


def _ordinal(spec: StudySpec, question: str) -> bool:
    """Whether a question's values are ordered (the study's alpha level says so)."""
    return spec.alpha_level == "ordinal" and spec.question(question).agreement


def _choices(answers: Mapping[str, str]) -> list[dict[str, Any]]:
    """A Label Studio result list answering each question with one choice (its alias)."""
    return [
        {"from_name": name, "to_name": "item", "type": "choices", "value": {"choices": [value]}}
        for name, value in answers.items()
    ]
