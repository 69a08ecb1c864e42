"""The disposition simulator served over HTTP in its own process (demo, tests, calibration).

It serves every built-in preset (the classifier answers through any of them, e.g.
``sim/default``) and the disposition arms ``sim/disp-<preset>-d<dose>[-s<seed>]``, which
recognise probes by exact lookup in the batteries (the shipped sample unless ``--batteries``
names a file).

Usage as a module (what :class:`~study.sim_endpoint.SimProcess` runs with
``module="study.disposition.sim_endpoint"``)::

    SIM_API_KEY=... python -m study.disposition.sim_endpoint --port 8765 [--batteries FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from study.disposition.items import BatteryDocument, load_sample_batteries, read_batteries
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


def main(argv: list[str] | None = None) -> None:
    """Serve the simulator with the disposition arms (key from ``SIM_API_KEY``)."""
    from llm.sim.server import serve

    parser = argparse.ArgumentParser(description="DriftLens disposition simulator")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--batteries", type=Path, default=None)
    args = parser.parse_args(argv)
    doc = read_batteries(args.batteries) if args.batteries else load_sample_batteries()
    serve("127.0.0.1", args.port, model_routes=(DispositionRoute(probe_registry(doc)),))


if __name__ == "__main__":
    main()
