"""Setting up a disposition study from the browser: batteries, arms, the job commands.

The Disposition page is thin over these functions. A study is its arms (stored at once,
:func:`study.disposition.runs.add_arms`) and the batteries it is asked: the shipped sample
or a file the researcher uploads, validated by the importers ``driftlens disposition``
uses (errors name the uploaded file and its line) and kept in the workspace, so the
background job, a rerun and the human studies read the very same file. Running and
analysing are the CLI's own commands (:func:`run_argv`, :func:`analyze_argv`), submitted as
background jobs, so a page, the CLI and a resumed job do exactly the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from llm.roles import SELF_JUDGING_FLAG
from llm.specs import ModelSpec, parse_spec, preset_name
from storage.errors import InputError
from storage.yaml_input import decode_upload
from study.disposition.items import (
    BatteryDocument,
    load_sample_batteries,
    parse_batteries_csv,
    parse_batteries_yaml,
    read_batteries,
)
from study.disposition.plan import Reasoning
from study.disposition.runs import ArmSpec
from study.disposition.sim.model import DISPOSITION_PRESETS
from study.disposition.sim.responder import arm_model_name
from study.report.folder import folder_slug

#: The simulated classifier (the demo's judge): reads the simulator's answers back.
SIM_JUDGE = "sim/default"
BATTERY_SUFFIXES: tuple[str, ...] = (".yaml", ".yml", ".csv")
#: Reasoning settings a form offers (``budget:N`` / ``filler:N`` take a word count).
REASONING_MODES: tuple[str, ...] = ("on", "off", "budget", "filler")


def sim_arm_presets() -> dict[str, str]:
    """The simulated disposition models (``sim/disp-*`` without a dose) → description."""
    return {f"sim/{name}": p.description for name, p in DISPOSITION_PRESETS.items()}


def sim_arm_model(preset: str, dose: float, train_seed: int = 0) -> ModelSpec:
    """The ``sim/…`` model of a simulated arm at ``dose`` (% harmful training answers).

    Args:
        preset: ``sim/disp-qwen`` (or ``disp-qwen``).
        dose: The arm's dose in percent.
        train_seed: A second training seed (0: the first).

    Raises:
        InputError: an unknown preset or a dose outside 0..100.
    """
    name = preset_name(preset)
    if name not in DISPOSITION_PRESETS:
        raise InputError(
            f"Unknown simulated disposition model {preset!r}; use one of "
            f"{', '.join(sorted(sim_arm_presets()))}."
        )
    if not 0 <= dose <= 100:
        raise InputError(f"A dose is a percentage in 0..100, not {dose:g}.")
    return parse_spec(f"sim/{arm_model_name(name, dose, train_seed)}")


def reasoning_setting(mode: str, words: int = 0) -> str:
    """The arm's reasoning text (``on``, ``off``, ``budget:256``, ``filler:256``).

    Raises:
        InputError: an unknown mode or a negative word count.
    """
    text = mode if mode in ("on", "off") else f"{mode}:{int(words)}"
    if words < 0:
        raise InputError("A reasoning budget is a number of words ≥ 0.")
    try:
        Reasoning.parse(text)
    except ValueError as exc:
        raise InputError(f"Reasoning: {exc}.") from None
    return text


def dose_arms(
    model_for_dose: dict[float, ModelSpec],
    *,
    reasoning: Sequence[str],
    samples: int = 2,
    train_seed: int | None = None,
) -> list[ArmSpec]:
    """One arm per (reasoning setting, dose); the lowest dose of each setting is its reference.

    Names follow the demo's (``on-d000``, ``budget256-d075``), so a study set up in the
    browser reads like the demo's report.

    Args:
        model_for_dose: The model of each dose (``{0: "sim/disp-qwen-d000", ...}``).
        reasoning: Reasoning settings (``on``, ``off``, ``budget:256`` ...), one arm group each.
        samples: Samples per probe (≥ 2: the null test compares two).
        train_seed: The training seed recorded with the arms.

    Raises:
        InputError: no dose or no reasoning setting.
    """
    if not model_for_dose:
        raise InputError("Give at least one dose.")
    if not reasoning:
        raise InputError("Choose at least one reasoning setting.")
    reference = min(model_for_dose)
    arms = []
    for setting in dict.fromkeys(reasoning):
        tag = setting.replace(":", "")
        for dose in sorted(model_for_dose):
            arms.append(
                ArmSpec(
                    name=f"{tag}-d{dose:03.0f}" if float(dose).is_integer() else f"{tag}-d{dose:g}",
                    model=model_for_dose[dose],
                    role="reference" if dose == reference else "treatment",
                    dose=float(dose),
                    train_seed=train_seed,
                    reasoning=setting,
                    samples=samples,
                )
            )
    return arms


def parse_doses(text: str) -> list[float]:
    """``0, 75, 100`` → ``[0.0, 75.0, 100.0]`` (sorted, unique).

    Raises:
        InputError: a part that is not a number in 0..100.
    """
    out: set[float] = set()
    for part in (p.strip() for p in text.replace(";", ",").split(",")):
        if not part:
            continue
        try:
            dose = float(part)
        except ValueError:
            raise InputError(f"Doses are numbers separated by commas, not {part!r}.") from None
        if not 0 <= dose <= 100:
            raise InputError(f"A dose is a percentage in 0..100, not {part}.")
        out.add(dose)
    if not out:
        raise InputError("Give at least one dose (e.g. 0, 75, 100).")
    return sorted(out)


def check_batteries_upload(filename: str, data: bytes) -> BatteryDocument:
    """Validate an uploaded battery file exactly as ``--batteries FILE`` would be read.

    Raises:
        InputError: not .yaml/.yml/.csv, not UTF-8, or not a valid battery file (the
            message names the file and the line).
    """
    suffix = Path(filename).suffix.lower()
    if suffix not in BATTERY_SUFFIXES:
        raise InputError(f"{filename}: battery files must be .yaml, .yml or .csv.")
    text = decode_upload(data, filename=filename)
    if suffix == ".csv":
        return parse_batteries_csv(text, source=filename)
    return parse_batteries_yaml(text, source=filename)


def inputs_folder(workspace: Path, study: str) -> Path:
    """Where a study's uploaded batteries are kept (one folder per study)."""
    return workspace / "inputs" / "disposition" / folder_slug(study)


def save_batteries(workspace: Path, study: str, filename: str, data: bytes) -> Path:
    """Validate an uploaded battery file and keep it as the study's batteries.

    Returns:
        The stored file (``inputs/disposition/<study>/batteries.<ext>``), replaced as a
        whole when a new file is uploaded.

    Raises:
        InputError: the file is not a valid battery file (nothing is stored then).
    """
    check_batteries_upload(filename, data)
    folder = inputs_folder(workspace, study)
    folder.mkdir(parents=True, exist_ok=True)
    suffix = Path(filename).suffix.lower()
    for old in folder.glob("batteries.*"):
        old.unlink()
    target = folder / f"batteries{'.yaml' if suffix == '.yml' else suffix}"
    tmp = folder / f".{target.name}.tmp"
    tmp.write_bytes(data)
    tmp.replace(target)
    return target


def study_batteries(workspace: Path, study: str) -> Path | None:
    """The batteries file uploaded for ``study``, or ``None`` (the shipped sample)."""
    found = sorted(inputs_folder(workspace, study).glob("batteries.*"))
    return found[0] if found else None


def load_study_batteries(workspace: Path, study: str) -> BatteryDocument:
    """The batteries ``study`` is asked (its uploaded file, else the shipped sample)."""
    path = study_batteries(workspace, study)
    return read_batteries(path) if path is not None else load_sample_batteries()


def report_folder(workspace: Path, study: str) -> Path:
    """The study's own report folder (``reports/disposition/<study>``), never shared."""
    return workspace / "reports" / "disposition" / folder_slug(study)


def run_argv(
    study: str,
    *,
    judge: ModelSpec,
    batteries: Path | None,
    concurrency: int = 8,
    repeat_share: float = 0.1,
    report: Path | None = None,
    bootstrap: int = 2000,
    allow_self_judging: bool = False,
) -> list[str]:
    """``driftlens disposition run …`` for ``study`` (generate, re-ask, classify; resumable).

    With ``report``, the same command then analyses the study into that folder
    (``--report``, ``bootstrap`` stem resamples): one job from arms to results. With
    ``allow_self_judging`` the classifier may be an arm's own model (``--allow-self-judging``;
    refused otherwise).
    """
    argv = ["disposition", "run", "--study", study, "--judge", str(judge)]
    argv += ["--concurrency", str(concurrency), "--repeat-share", f"{repeat_share:g}"]
    if batteries is not None:
        argv += ["--batteries", str(batteries)]
    if report is not None:
        argv += ["--report", str(report), "--bootstrap", str(bootstrap)]
    if allow_self_judging:
        argv.append(SELF_JUDGING_FLAG)
    return argv


def analyze_argv(study: str, *, out: Path, bootstrap: int = 2000, seed: int = 0) -> list[str]:
    """``driftlens disposition analyze …``: statistics and report into the study's folder."""
    return [
        "disposition",
        "analyze",
        "--study",
        study,
        "--out",
        str(out),
        "--bootstrap",
        str(bootstrap),
        "--seed",
        str(seed),
    ]
