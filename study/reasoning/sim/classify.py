"""Find the condition behind a prompt: classify the memory line of a reasoning-drift request.

The study's perturbation catalog knows every stimulus exactly; callers that have it pass
a ``classify_memory`` callable built from it (:func:`classifier_from_catalog`).
:func:`default_classify_memory` is the fallback heuristic, good enough for the built-in
stimuli and hand-typed demos. The user message itself is split by
:func:`study.prompts.split_user_message`, the inverse of the prompt that built it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from llm.sim.response import Classifier

_FILLER_WORDS = frozenset(
    {
        "hi",
        "hello",
        "hey",
        "uh",
        "um",
        "umm",
        "er",
        "okay",
        "ok",
        "so",
        "well",
        "hmm",
        "yeah",
        "right",
        "alright",
        "oh",
        "ah",
    }
)
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|my|me|im)\b", re.IGNORECASE)

# First matching keyword wins; order puts the more specific categories first.
_ATTRIBUTE_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "gender_identity",
        (
            "transgender",
            "cisgender",
            "trans ",
            "non-binary",
            "nonbinary",
            "genderqueer",
            "transitioned",
        ),
    ),
    (
        "sexual_orientation",
        ("gay", "lesbian", "bisexual", "straight", "queer", "asexual", "pansexual"),
    ),
    (
        "disability_health",
        (
            "wheelchair",
            "blind",
            "deaf",
            "disab",
            "chronic",
            "diabet",
            "autis",
            "adhd",
            "illness",
            "limp",
            "depression",
            "anxiety",
        ),
    ),
    (
        "age",
        (
            "years old",
            "teenager",
            "twenties",
            "thirties",
            "forties",
            "fifties",
            "sixties",
            "seventies",
            "eighties",
            "nineties",
            "retired",
            "retiree",
            "in my 20s",
            "in my 30s",
            "in my 40s",
            "in my 50s",
            "in my 60s",
            "in my 70s",
            "elderly",
            "senior",
        ),
    ),
    (
        "education_income",
        (
            "degree",
            "wage",
            "a year",
            "phd",
            "dropped out",
            "high school",
            "college",
            "income",
            "salary",
            "graduate",
            "diploma",
        ),
    ),
    (
        "socioeconomic",
        (
            "poor",
            "public housing",
            "food assistance",
            "rental properties",
            "wealthy",
            "rich",
            "working class",
            "working-class",
            "homeless",
            "welfare",
            "upper class",
            "middle class",
            "inherited",
            "debt",
        ),
    ),
    (
        "physical_traits",
        (
            "missing two",
            "albinism",
            "tall",
            "short",
            "left-handed",
            "freckles",
            "scar",
            "birthmark",
            "tattoo",
            "red hair",
            "stutter",
        ),
    ),
    (
        "appearance",
        (
            "good-looking",
            "acne",
            "overweight",
            "thin",
            "attractive",
            "beautiful",
            "ugly",
            "bald",
            "glasses",
            "dress",
            "look ",
        ),
    ),
    (
        "occupation",
        (
            "teacher",
            "nurse",
            "engineer",
            "doctor",
            "lawyer",
            "farmer",
            "driver",
            "programmer",
            "developer",
            "chef",
            "cashier",
            "professor",
            "work as",
            "job as",
            "for a living",
            "accountant",
            "mechanic",
            "artist",
            "soldier",
        ),
    ),
    ("gender", ("woman", "man", "female", "male", "girl", "boy", "mother", "father")),
)

_LIFE_EVENT_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pandemic", ("pandemic", "lockdown", "covid", "quarantine")),
    (
        "natural_disaster",
        ("earthquake", "flood", "hurricane", "wildfire", "tornado", "tsunami", "disaster"),
    ),
    (
        "forced_migration",
        (
            "fled",
            "left their country",
            "refugee",
            "asylum",
            "forced to leave",
            "displaced",
            "migrat",
        ),
    ),
    (
        "job_loss",
        (
            "laid off",
            "lost their job",
            "lost his job",
            "lost her job",
            "fired",
            "redundan",
            "unemploy",
        ),
    ),
    ("divorce", ("divorce", "spouse left", "partner left", "separated", "marriage ended")),
    (
        "new_parenthood",
        (
            "became a parent",
            "adopted",
            "twins",
            "first child",
            "baby",
            "newborn",
            "became a mother",
            "became a father",
            "gave birth",
        ),
    ),
    ("bereavement", ("died", "passed away", "death of", "funeral", "lost their", "grief", "widow")),
    (
        "illness_diagnosis",
        (
            "diagnos",
            "sclerosis",
            "kidneys",
            "dialysis",
            "cancer",
            "tumou",
            "tumor",
            "chemotherapy",
            "terminal",
        ),
    ),
    (
        "accident",
        ("accident", "hit by a car", "house fire", "crash", "injur", "fell from", "collision"),
    ),
    (
        "childhood_adversity",
        ("childhood", "bullied", "grew up", "foster", "orphan", "as a child", "abuse", "neglect"),
    ),
)

# Leaves each category pulls toward when it edits a trajectory (see SimPreset.affinity).
CATEGORY_AFFINITY: dict[str, tuple[str, ...]] = {
    "gender": ("Social equity and justice", "Security and stability"),
    "gender_identity": ("Social equity and justice", "Emotional depth and authentic connection"),
    "sexual_orientation": ("Social equity and justice", "Emotional depth and authentic connection"),
    "age": ("Security and stability", "Pleasure and enjoyment", "Professional advancement"),
    "occupation": ("Professional advancement", "Efficiency and resource optimization"),
    "appearance": (
        "Emotional depth and authentic connection",
        "Artistic expression and appreciation",
    ),
    "disability_health": ("Protection of people and environment", "Security and stability"),
    "education_income": ("Professional advancement", "Efficiency and resource optimization"),
    "physical_traits": (
        "Emotional depth and authentic connection",
        "Protection of people and environment",
    ),
    "socioeconomic": ("Security and stability", "Social equity and justice"),
    "childhood_adversity": ("Security and stability", "Emotional depth and authentic connection"),
    "illness_diagnosis": (
        "Spiritual fulfillment and meaning",
        "Emotional depth and authentic connection",
    ),
    "accident": ("Protection of people and environment", "Security and stability"),
    "bereavement": (
        "Emotional depth and authentic connection",
        "Spiritual fulfillment and meaning",
    ),
    "new_parenthood": ("Protection of people and environment", "Security and stability"),
    "divorce": ("Emotional depth and authentic connection", "Security and stability"),
    "job_loss": ("Security and stability", "Efficiency and resource optimization"),
    "forced_migration": ("Security and stability", "Cultural respect and tradition"),
    "natural_disaster": ("Protection of people and environment", "Security and stability"),
    "pandemic": ("Protection of people and environment", "Ethical responsibility"),
}


def classifier_from_catalog(
    entries: Iterable[tuple[str, str, str]], *, fallback: Classifier | None = None
) -> Classifier:
    """Build an exact-match classifier from catalog entries.

    Args:
        entries: ``(text, condition_class, category)`` for every stimulus, e.g.
            ``[(e.text, e.condition_class, e.category) for e in doc.entries()]``.
        fallback: Used for lines not in the catalog (default:
            :func:`default_classify_memory`).
    """
    table = {text: (cls, cat) for text, cls, cat in entries}
    other = fallback or default_classify_memory

    def classify(line: str) -> tuple[str, str | None]:
        hit = table.get(line)
        return hit if hit is not None else other(line)

    return classify


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def _match(text: str, table: tuple[tuple[str, tuple[str, ...]], ...]) -> str | None:
    low = f" {text.lower()} "
    for category, words in table:
        for w in words:
            # Short words must match whole words ("man" must not match "manager").
            if len(w) <= 4 and w.isalpha():
                if re.search(rf"\b{re.escape(w)}\b", low):
                    return category
            elif w in low:
                return category
    return None


def default_classify_memory(line: str) -> tuple[str, str | None]:
    """Guess ``(condition_class, category)`` of a memory line.

    Rules: empty → baseline; whitespace, punctuation or a few filler words → noise;
    a short first-person line → attribute; anything longer (multi-sentence, third
    person) → life event. Categories come from keyword tables and may be ``None``.

    Args:
        line: The memory line as it appears in the prompt.
    """
    if line == "":
        return "baseline", None
    stripped = line.strip()
    if not stripped:
        return "noise", "whitespace"
    if not re.search(r"[A-Za-z0-9]", stripped):
        return "noise", "punctuation"
    words = re.findall(r"[a-z']+", stripped.lower())
    if len(words) <= 3 and all(w in _FILLER_WORDS for w in words):
        return "noise", "filler"
    sentences = _sentences(stripped)
    first_person = bool(_FIRST_PERSON.search(stripped))
    event = _match(stripped, _LIFE_EVENT_KEYWORDS)
    # A multi-sentence story about a life event is one even when told in the first person.
    if len(sentences) >= 2 and event is not None:
        return "life_event", event
    if first_person and len(sentences) <= 2 and len(words) <= 25:
        return "attribute", _match(stripped, _ATTRIBUTE_KEYWORDS)
    return "life_event", event
