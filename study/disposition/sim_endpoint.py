"""The disposition simulator served over HTTP in its own process (demo, tests, calibration).

It serves every built-in preset (the classifier answers through any of them, e.g.
``sim/default``) and the disposition arms ``sim/disp-<preset>-d<dose>[-s<seed>]``, which
recognise probes in the batteries (the shipped sample unless ``--batteries`` names a file)
by item id, as the in-process arms do: only the request arrives over HTTP, so the item is
the one whose text it carries and whose plan seed it was sent with
(:class:`ServedProbes`).

Usage as a module (what :class:`~study.sim_endpoint.SimProcess` runs with
``module="study.disposition.sim_endpoint"``)::

    SIM_API_KEY=... python -m study.disposition.sim_endpoint --port 8765 [--batteries FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from study.disposition.items import (
    BatteryDocument,
    Probe,
    load_sample_batteries,
    read_batteries,
)
from study.disposition.sim.responder import DispositionRoute, ProbeInfo


def probe_registry(doc: BatteryDocument) -> dict[str, ProbeInfo]:
    """Probe text (whitespace-normalised) → what the simulator knows about it."""
    out: dict[str, ProbeInfo] = {}
    for b in doc.batteries:
        for p in b.probes():
            out[" ".join(p.text.split())] = ProbeInfo(
                b.name, p.stem, p.paraphrase, b.category_names, b.aligned_category
            )
    return out


def probe_index(doc: BatteryDocument) -> dict[tuple[str, str, int], ProbeInfo]:
    """``(battery, stem, paraphrase)`` → what the simulator knows about that probe.

    The in-process arms look a probe up by its item id (the request's tag), as the
    source-reliance simulator does: by text, stems sharing a paraphrase's text (a battery
    widened by reusing texts under new ids) all answered as the last of them.
    """
    return {
        (b.name, p.stem, p.paraphrase): ProbeInfo(
            b.name, p.stem, p.paraphrase, b.category_names, b.aligned_category
        )
        for b in doc.batteries
        for p in b.probes()
    }


#: Re-asks an arm may make (``ArmSpec.max_reasks`` is 0-3): each is sent with its own seed.
_MAX_REASKS = 3
#: Distinct ``(text, seed)`` lookups remembered by a served simulator before it forgets them.
_REMEMBERED = 200_000


class ServedProbes:
    """``(text, seed) → probe``: which item a request to a served arm asks.

    A plan request's seed is derived from its item id (:func:`~study.disposition.plan.
    item_seed` of the probe and sample, then the re-ask), so among the probes that share
    the request's text the one whose seeds include it is the item asked. A text only one
    probe has needs no search. Keyed by text alone, a battery widened by reusing texts
    under new stem ids answered every such stem as the last of them (40 stems were 10
    items over HTTP, while in-process they were 40).

    Args:
        doc: The batteries the server knows.
    """

    def __init__(self, doc: BatteryDocument) -> None:
        self._by_text: dict[str, list[tuple[Probe, ProbeInfo]]] = {}
        for b in doc.batteries:
            for p in b.probes():
                info = ProbeInfo(b.name, p.stem, p.paraphrase, b.category_names, b.aligned_category)
                self._by_text.setdefault(" ".join(p.text.split()), []).append((p, info))
        self._found: dict[tuple[str, int], ProbeInfo | None] = {}

    def __call__(self, text: str, seed: int) -> ProbeInfo | None:
        """The probe asked (``None``: no probe has this text, or none was sent this seed)."""
        candidates = self._by_text.get(text)
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0][1]
        key = (text, seed)
        if key not in self._found:
            if len(self._found) >= _REMEMBERED:
                self._found.clear()
            self._found[key] = self._search(candidates, seed)
        return self._found[key]

    @staticmethod
    def _search(candidates: list[tuple[Probe, ProbeInfo]], seed: int) -> ProbeInfo | None:
        from llm.seeds import derive_seed
        from study.disposition.plan import item_seed
        from study.limits import DISPOSITION_SAMPLES

        # samples in plan order: a study's few first samples are found after few hashes
        for sample in range(1, int(DISPOSITION_SAMPLES.high) + 1):
            for probe, info in candidates:
                base = item_seed(probe, sample)
                for attempt in (None, *range(1, _MAX_REASKS + 1)):
                    if derive_seed(base, sample, attempt) == seed:
                        return info
        return None


def served_route(doc: BatteryDocument) -> DispositionRoute:
    """The arms' route of the served simulator: probes by item id, then by text."""
    return DispositionRoute(probe_registry(doc), by_item=ServedProbes(doc))


def main(argv: list[str] | None = None) -> None:
    """Serve the simulator with the disposition arms (key from ``SIM_API_KEY``)."""
    from llm.sim.server import serve

    parser = argparse.ArgumentParser(description="DriftLens disposition simulator")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--batteries", type=Path, default=None)
    args = parser.parse_args(argv)
    doc = read_batteries(args.batteries) if args.batteries else load_sample_batteries()
    serve("127.0.0.1", args.port, model_routes=(served_route(doc),))


if __name__ == "__main__":
    main()
