"""Read user YAML and text files with errors that name the file and the line in one sentence.

Shared by every YAML the workbench imports (ontologies, perturbation catalogs, rewrite
proposals): :func:`load_yaml` parses text and keeps the node tree, :func:`yaml_line`
follows a pydantic error location to the line of the offending node, and
:func:`validation_error` turns the first pydantic error into an
:class:`~storage.errors.InputError`. :func:`read_text_file` and :func:`decode_upload` give
the text of a file, or of an uploaded file's bytes, the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from storage.errors import InputError

ModelT = TypeVar("ModelT", bound=BaseModel)


def read_text_file(path: Path, *, what: str = "file") -> str:
    """Read a UTF-8 text file (a BOM is dropped); errors name the file.

    Raises:
        InputError: the file is missing, unreadable or not UTF-8 (with the byte offset).
    """
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{path}: {what} not found.") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}).") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what} ({exc.strerror or exc}).") from None


def decode_upload(data: bytes, *, filename: str) -> str:
    """The text of an uploaded file's bytes (UTF-8, a BOM dropped); errors name the line.

    Raises:
        InputError: the bytes are not UTF-8 (the message names the line of the first bad
            byte).
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{filename} line {line}: the file is not UTF-8 text.") from None


def yaml_syntax_error(exc: yaml.YAMLError, *, source: str) -> InputError:
    """One sentence for a PyYAML error: ``SOURCE line L, column C: problem.``"""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or "invalid YAML"
    context = getattr(exc, "context", None)
    detail = f"{problem} ({context})" if context else str(problem)
    return InputError(f"{source}{where}: invalid YAML, {' '.join(detail.split())}.")


def load_yaml(text: str, *, source: str) -> tuple[Any, yaml.Node | None]:
    """Parse YAML text; return the data and its node tree (for line numbers).

    Raises:
        InputError: a syntax error, named by file, line and column.
    """
    try:
        return yaml.safe_load(text), yaml.compose(text)
    except yaml.YAMLError as exc:
        raise yaml_syntax_error(exc, source=source) from None


def load_yaml_mapping(
    text: str, *, source: str, expected: str
) -> tuple[dict[Any, Any], yaml.Node | None]:
    """:func:`load_yaml` of a document that must be a mapping (every document we import is).

    Args:
        text: the YAML text.
        source: the file name shown.
        expected: the clause said when it is not a mapping (``"an ontology is a mapping
            with 'name' and 'roots'"``).

    Raises:
        InputError: a syntax error, or the document is not a mapping (line 1).
    """
    data, root = load_yaml(text, source=source)
    if not isinstance(data, dict):
        raise InputError(f"{source} line 1: {expected}.")
    return data, root


def parse_yaml_model(
    model: type[ModelT], text: str, *, source: str, expected: str, what: str
) -> ModelT:
    """A YAML mapping validated as ``model``: errors as :func:`validation_error` gives them.

    Args:
        model: the pydantic model of the document.
        text: the YAML text.
        source: the file name shown.
        expected: as :func:`load_yaml_mapping`.
        what: what the document should be (as :func:`validation_error`).

    Raises:
        InputError: a syntax error, not a mapping, or not a valid ``what``.
    """
    data, root = load_yaml_mapping(text, source=source, expected=expected)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, root, source=source, what=what) from None


def yaml_line(node: Any, loc: tuple[Any, ...]) -> int:
    """Follow a pydantic error location through the YAML node tree to a 1-based line."""
    line = node.start_mark.line + 1 if node is not None else 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            child = node.value[part] if part < len(node.value) else None
        else:
            child = None
        if child is None:
            break
        node = child
        line = node.start_mark.line + 1
    return line


def validation_error(
    exc: ValidationError, root: Any, *, source: str, what: str | None = None
) -> InputError:
    """The first pydantic error as one sentence naming file, line and field.

    Args:
        exc: the validation error.
        root: the YAML node tree of the document (from :func:`load_yaml`).
        source: the file name shown.
        what: what the document should be (``"ontology"``: "not a valid ontology").
    """
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    where = ".".join(str(p) for p in loc) or "document"
    line = yaml_line(root, loc)
    kind = f"not a valid {what}: " if what else ""
    return InputError(f"{source} line {line}: {kind}{where}: {err['msg']}.")
