"""The parameters of one reasoning-drift analysis and their defaults."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from study.reasoning.drift_files import METRICS

#: Default seed of the cluster bootstrap (ARCHITECTURE rule 7: every random procedure is seeded).
DEFAULT_SEED = 20_240_601
#: Default number of bootstrap replicates (SPEC §7).
DEFAULT_BOOTSTRAP = 10_000
#: SRI weight of the sequence term (SPEC §6).
SRI_ALPHA = 0.5


class AnalysisConfig(BaseModel):
    """The parameters of one analysis (stored on the ``Analysis`` row).

    Attributes:
        version: schema version of this record.
        run: generation run name (the first, when several runs are analysed together).
        runs: every analysed run (one model each).
        labeler: labeler spec string.
        ontology_version: ``name@N`` of the ontology version the labels belong to.
        bootstrap: cluster-bootstrap replicates B.
        seed: bootstrap seed.
        sri_alpha: SRI weight of the sequence term.
        metrics: analysed metric columns.
        condition_unit: what a condition of the statistics is (``category``).
        examples_per_class: example pairs shown per condition class.
    """

    model_config = ConfigDict(frozen=True)

    version: int = 1
    run: str
    runs: tuple[str, ...] = ()
    labeler: str
    ontology_version: str
    bootstrap: int = DEFAULT_BOOTSTRAP
    seed: int = DEFAULT_SEED
    sri_alpha: float = SRI_ALPHA
    metrics: tuple[str, ...] = METRICS
    condition_unit: str = "category"
    examples_per_class: int = 2
