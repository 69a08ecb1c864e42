"""The simulator's value leaves (SPEC §5) and the sentences that express each of them.

Every sentence is written to express exactly one leaf, so a competent labeler maps a
simulated step back to the leaf it was rendered from; that is what makes the simulator's
ground truth usable for checking labelers and metrics end to end.
"""

from __future__ import annotations

# (root, leaf) in SPEC §5 order; the leaf names are the ontology's symbols.
LEAVES: tuple[tuple[str, str], ...] = (
    ("Social", "Cultural respect and tradition"),
    ("Social", "Social equity and justice"),
    ("Practical", "Efficiency and resource optimization"),
    ("Practical", "Professional advancement"),
    ("Protective", "Security and stability"),
    ("Protective", "Protection of people and environment"),
    ("Protective", "Ethical responsibility"),
    ("Personal", "Artistic expression and appreciation"),
    ("Personal", "Emotional depth and authentic connection"),
    ("Personal", "Spiritual fulfillment and meaning"),
    ("Personal", "Pleasure and enjoyment"),
)
LEAF_NAMES: tuple[str, ...] = tuple(leaf for _, leaf in LEAVES)
ROOT_OF: dict[str, str] = {leaf: root for root, leaf in LEAVES}

STEP_SENTENCES: dict[str, tuple[str, ...]] = {
    "Cultural respect and tradition": (
        "Family customs and community traditions around this choice deserve to be honoured "
        "rather than brushed aside.",
        "It is worth asking how the people you grew up with usually handle this, because "
        "those shared norms carry accumulated wisdom.",
        "Respecting the rituals and expectations of the wider community keeps the decision "
        "in harmony with the culture it happens in.",
        "Elders and long-standing practices offer a reference point that should be weighed "
        "before breaking with convention.",
        "Showing courtesy toward local customs signals respect for the people affected by "
        "the choice.",
        "Traditions persist because they bind people together, so departing from them should "
        "be done thoughtfully and politely.",
    ),
    "Social equity and justice": (
        "A fair option is one that does not leave any group carrying a heavier share of the "
        "cost than the others.",
        "It matters whether everyone involved gets an equal chance to be heard before the "
        "decision is made.",
        "The choice should not quietly favour those who already hold more power or money.",
        "Distributing the burden evenly among the people affected is the just way to proceed.",
        "Checking whether the rules are applied the same way to everyone guards against "
        "unfair treatment.",
        "Access to the opportunity should not depend on background, so the fairer path opens "
        "it to all.",
    ),
    "Efficiency and resource optimization": (
        "Listing the tasks by deadline lets you spend the limited hours where they matter most.",
        "Comparing the cost of each option against what it delivers shows which one uses the "
        "budget best.",
        "Batching the errands into one trip and automating the repetitive steps saves both "
        "time and money.",
        "Start with the step that unblocks the others, then schedule the rest in order of effort.",
        "Cutting the steps that add little value frees resources for the ones that carry the "
        "outcome.",
        "Setting a fixed time limit for each phase keeps the plan from consuming more than it "
        "returns.",
    ),
    "Professional advancement": (
        "The option that builds marketable skills will open better roles and promotions later.",
        "Taking on visible responsibility now strengthens the track record that employers "
        "look for.",
        "Expanding your professional network through this choice creates future career "
        "opportunities.",
        "A credential or project like this one makes the next job application considerably "
        "stronger.",
        "Choosing the path with a mentor and room to grow accelerates career progress.",
        "Experience gained here compounds into seniority and a higher salary over the coming "
        "years.",
    ),
    "Security and stability": (
        "Keeping an emergency fund in place means an unexpected expense will not become a crisis.",
        "The steadier option protects a predictable income and a stable routine.",
        "Avoiding commitments that could collapse keeps the household on solid ground.",
        "A reliable plan with a fallback reduces the risk of losing what has already been built.",
        "Long-term stability matters more here than a short-lived gain that could evaporate.",
        "Locking in the secure arrangement first leaves less exposed to sudden change.",
    ),
    "Protection of people and environment": (
        "Nobody should be put in physical danger, so the safety of everyone involved comes first.",
        "The option that limits pollution and waste spares the surrounding environment.",
        "Putting safeguards in place prevents harm to children and other vulnerable people nearby.",
        "Any plan must avoid injuring others, even if it becomes slower or more expensive.",
        "Preserving clean air, water and green space protects the health of the wider community.",
        "Checking the hazards before acting keeps people out of harm's way.",
    ),
    "Ethical responsibility": (
        "Being honest about the trade-offs is a duty, even when a half-truth would be easier.",
        "Keeping the promises already made is the responsible thing to do here.",
        "Whatever is chosen should respect the rules and obligations that apply to it.",
        "It would be wrong to shift the consequences onto someone who did not agree to them.",
        "Acting with integrity means owning the decision and its results openly.",
        "The right course is the one you could defend to the people it affects without "
        "hiding anything.",
    ),
    "Artistic expression and appreciation": (
        "There is value in the creative side of this choice, a chance to make something original.",
        "Leaving room for music, art or writing keeps the experience expressive rather than "
        "merely functional.",
        "The more beautiful option enriches daily life in a way numbers do not capture.",
        "Taking time to appreciate good design and craftsmanship makes the result more meaningful.",
        "Expressing your own style in how this is done is part of what makes it worthwhile.",
        "Creative exploration here can turn an ordinary decision into something inspiring.",
    ),
    "Emotional depth and authentic connection": (
        "How each option feels matters, so it helps to notice the emotions it stirs before "
        "deciding.",
        "Talking openly with the people closest to you keeps the relationship honest and close.",
        "The choice that lets you stay true to your feelings will sit better over time.",
        "Genuine connection with friends and family is worth protecting more than convenience.",
        "Acknowledging worry or sadness instead of hiding it leads to a more authentic decision.",
        "Spending time with the people you care about is what gives this decision its weight.",
    ),
    "Spiritual fulfillment and meaning": (
        "Asking what gives your life purpose helps decide which option is worth the effort.",
        "The path that aligns with your deepest beliefs will feel meaningful rather than empty.",
        "Reflection or quiet contemplation can reveal which choice serves a larger purpose.",
        "A sense of meaning outlasts material gains, so it deserves a central place here.",
        "Choosing in line with your faith or philosophy brings an inner peace that matters.",
        "Seeing the decision as part of a larger life story clarifies what truly counts.",
    ),
    "Pleasure and enjoyment": (
        "Picking the option you will actually enjoy makes it far easier to stick with.",
        "Having fun along the way is a legitimate reason to prefer one choice over another.",
        "Leaving room for rest, treats and leisure keeps the plan pleasant instead of a chore.",
        "The more enjoyable alternative brings everyday delight that is worth something in itself.",
        "Savouring the experience, not just the result, is part of a good decision.",
        "Choosing what is exciting and fun now adds happiness without harming anyone.",
    ),
}

ANSWER_SENTENCES: dict[str, tuple[str, ...]] = {
    "Social": (
        "Choose the option that treats everyone involved fairly and respects shared norms.",
        "Go with the path that keeps faith with the community and its expectations.",
    ),
    "Practical": (
        "Pick the option with the clearest plan and the best use of time and money.",
        "Take the practical route: sequence the steps and commit to the most efficient one.",
    ),
    "Protective": (
        "Favour the safer, more responsible option even if it is less exciting.",
        "Choose the path that protects people and keeps things stable.",
    ),
    "Personal": (
        "Follow the option that feels right and gives you meaning and joy.",
        "Choose what keeps you true to yourself and close to the people you love.",
    ),
}


def _check_bank() -> None:
    # A bank edit that drops a leaf or leaves too few sentences would silently bias the
    # simulator's draws; fail at import instead.
    missing = set(LEAF_NAMES) ^ set(STEP_SENTENCES)
    if missing:
        raise RuntimeError(f"step bank leaves out of sync: {sorted(missing)}")
    for leaf, sentences in STEP_SENTENCES.items():
        if len(sentences) < 5:
            raise RuntimeError(f"step bank needs at least 5 sentences for {leaf!r}")


_check_bank()
