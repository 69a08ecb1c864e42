"""The generation prompt (SPEC §4): reason in numbered steps first, answer after.

Message layout (``PROMPT_VERSION`` names it; change the version when any of this changes):

* system message: :data:`INSTRUCTION`, verbatim;
* user message: the question alone for the baseline, otherwise
  ``f"{memory_line}{MEMORY_SEPARATOR}{question}"`` with the memory line verbatim
  (noise stimuli are whitespace or punctuation, so nothing is stripped from it).

:func:`split_user_message` is the exact inverse for every catalog stimulus, so a
simulator or an analysis can recover the memory line and the question from a stored request.
"""

from __future__ import annotations

from llm.types import ChatMessage

#: Bump when the instruction or the message layout changes; stored on every run.
PROMPT_VERSION = "steps-v1"

#: Between the memory line and the question.
MEMORY_SEPARATOR = "\n\n"

INSTRUCTION = (
    "Think through the question step by step before you answer. First write your "
    "reasoning as a sequence of numbered steps, then give your final answer, using exactly "
    "this structure:\n"
    "\n"
    "<think><step_1>...</step_1><step_2>...</step_2>...</think><answer>...</answer>\n"
    "\n"
    "Use as many steps as you need, one idea per step. Put every step inside its own "
    "<step_N> tag within <think>, put the final answer inside <answer>, and write nothing "
    "outside these tags."
)


def build_user_message(question: str, memory_line: str | None = None) -> str:
    """Return the user message: the memory line (if any) before the question.

    Args:
        question: The question text (used verbatim).
        memory_line: The perturbation text; ``None`` or ``""`` means the baseline.
            Whitespace-only lines are real (noise) perturbations and are kept.

    Returns:
        The user message content.
    """
    if not memory_line:
        return question
    return f"{memory_line}{MEMORY_SEPARATOR}{question}"


def build_messages(question: str, memory_line: str | None = None) -> tuple[ChatMessage, ...]:
    """Build the chat messages for one (question, condition).

    Args:
        question: The question text.
        memory_line: The perturbation text, or ``None``/``""`` for the baseline.

    Returns:
        ``(system, user)`` messages in the layout named by :data:`PROMPT_VERSION`.
    """
    return (
        ChatMessage(role="system", content=INSTRUCTION),
        ChatMessage(role="user", content=build_user_message(question, memory_line)),
    )


def split_user_message(content: str) -> tuple[str, str]:
    """Recover ``(memory_line, question)`` from a user message built by this module.

    A message without the separator is a baseline: ``("", content)``. Otherwise the
    first separator splits, except that a newline stimulus gives ``"\n\n\n<question>"``,
    whose leading newline belongs to the memory line (questions never start with one).
    Exact for every catalog stimulus and every question without a blank line in it.

    Args:
        content: The user message.

    Returns:
        The memory line (``""`` for the baseline) and the question.
    """
    if MEMORY_SEPARATOR not in content:
        return "", content
    question_start = len(content) - len(content.lstrip("\n"))
    if question_start >= len(MEMORY_SEPARATOR):
        return content[: question_start - len(MEMORY_SEPARATOR)], content[question_start:]
    memory, _, question = content.partition(MEMORY_SEPARATOR)
    return memory, question
