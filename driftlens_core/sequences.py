"""Symbol sequences, validated: one sequence as an int64 array, many as :class:`PackedSequences`.

A trajectory is a sequence of non-negative integer symbols (the ontology labels of the
reasoning steps). The drift metrics of :mod:`driftlens_core.metrics` take their input
through here: :func:`symbol_array` checks one sequence, :func:`pack` (public:
:func:`pack_sequences`) checks and packs many into one flat array plus offsets, the form
the compiled pair kernel of :mod:`driftlens_core._metrics` reads. Invalid input raises
:class:`ValueError` naming the offending sequence and position.
"""

from __future__ import annotations

import array
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from driftlens_core._impl import compiled_module

__all__ = ["PackedSequences", "pack_sequences"]

# Symbols must fit the compiled kernels' int32 with room to spare.
MAX_SYMBOL = 2**31 - 2
# Alphabets larger than this are renumbered densely before the compiled kernels run
# (the metrics only compare symbols for equality, so renumbering changes nothing).
BYTE_ALPHABET = 255

IntArray = npt.NDArray[np.int64]


# ------------------------------------------------------------------ validation


def symbol_array(values: Any, name: str) -> IntArray:
    """Return ``values`` as a 1-D int64 array of non-negative symbols or raise ``ValueError``."""
    if isinstance(values, str | bytes):
        raise ValueError(f"{name} must be a sequence of integer symbols, not a string")
    if isinstance(values, PackedSequences):
        raise ValueError(f"{name} must be one sequence of integer symbols, not PackedSequences")
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as exc:  # ragged nesting, unconvertible objects
        raise ValueError(
            f"{name} must be a flat sequence of integer symbols (could not read it: {exc})"
        ) from None
    if arr.ndim != 1:
        if arr.ndim == 0:
            raise ValueError(f"{name} must be a sequence of integer symbols, not a scalar")
        raise ValueError(f"{name} must be a flat (1-D) sequence of symbols, got shape {arr.shape}")
    return check_symbol_array(arr, name)


def check_symbol_array(arr: np.ndarray, name: str) -> IntArray:
    """Validate a 1-D array of symbols (integers ≥ 0, or integral floats) and return int64."""
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    kind = arr.dtype.kind
    if kind == "f":
        finite = np.isfinite(arr)
        if not finite.all():
            bad = int(np.flatnonzero(~finite)[0])
            raise ValueError(
                f"{name} must contain integer symbols; position {bad} holds {arr[bad]!r}"
            )
        frac = arr != np.floor(arr)
        if frac.any():
            bad = int(np.flatnonzero(frac)[0])
            raise ValueError(
                f"{name} must contain integer symbols; position {bad} holds the "
                f"non-integer value {arr[bad]!r}"
            )
    elif kind not in "iub":
        raise ValueError(
            f"{name} must contain integer symbols, got values of dtype {arr.dtype} "
            "(strings, objects and complex numbers are not symbols)"
        )
    neg = arr < 0
    if neg.any():
        bad = int(np.flatnonzero(neg)[0])
        raise ValueError(
            f"{name} must contain non-negative symbols; position {bad} holds {arr[bad]!r}"
        )
    big = arr > MAX_SYMBOL
    if big.any():
        bad = int(np.flatnonzero(big)[0])
        raise ValueError(
            f"{name} holds symbol {arr[bad]!r} at position {bad}; symbols must be at most "
            f"{MAX_SYMBOL}"
        )
    return arr.astype(np.int64, copy=False)


# ------------------------------------------------------------------ packed sequences


@dataclass(frozen=True, eq=False)
class PackedSequences:
    """Many symbol sequences in one flat array: the input form of :func:`pair_drift`.

    Sequence ``i`` is ``symbols[offsets[i]:offsets[i + 1]]``. Construct it directly from
    a flat integer array and offsets, or with :func:`pack_sequences` from a list of
    sequences. Construction validates everything once and copies the arrays read-only
    (plus a byte copy of the symbols for the compiled kernels when every symbol is below
    255), so an instance can be passed to :func:`pair_drift` repeatedly at no further
    cost, e.g. one baseline set against each of K perturbed variants.

    Attributes:
        symbols: 1-D int32 array of non-negative symbols (read-only).
        offsets: 1-D int64 array of ``len(self) + 1`` non-decreasing positions, starting
            at 0 and ending at ``len(symbols)`` (read-only).
        max_symbol: the largest symbol, or -1 when there are no symbols.

    Raises:
        ValueError: symbols not a flat array of non-negative integers, or offsets not
            1-D, not integer, not starting at 0, decreasing, or not ending at
            ``len(symbols)``.
    """

    symbols: npt.NDArray[Any]
    offsets: npt.NDArray[Any]
    max_symbol: int = field(init=False)
    # The symbols as bytes plus 16 bytes of padding when they all fit (the compiled lane
    # kernels read these directly), else None.
    _bytes: npt.NDArray[np.uint8] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        sym = symbol_array(self.symbols, "PackedSequences.symbols")
        off_in = np.asarray(self.offsets)
        if off_in.ndim != 1 or off_in.size == 0:
            raise ValueError(
                f"PackedSequences.offsets must be a non-empty 1-D array, got shape {off_in.shape}"
            )
        if off_in.dtype.kind not in "iu":
            if off_in.dtype.kind == "f" and np.all(off_in == np.floor(off_in)):
                off_in = off_in.astype(np.int64)
            else:
                raise ValueError(
                    f"PackedSequences.offsets must be integers, got dtype {off_in.dtype}"
                )
        off = off_in.astype(np.int64)
        if off[0] != 0:
            raise ValueError(f"PackedSequences.offsets must start at 0, got {int(off[0])}")
        steps = np.diff(off)
        if (steps < 0).any():
            bad = int(np.flatnonzero(steps < 0)[0])
            raise ValueError(
                "PackedSequences.offsets must be non-decreasing (monotone); offsets"
                f"[{bad + 1}] = {int(off[bad + 1])} < offsets[{bad}] = {int(off[bad])}"
            )
        if off[-1] != sym.size:
            raise ValueError(
                f"PackedSequences.offsets must end at len(symbols) = {sym.size}, got {int(off[-1])}"
            )
        sym32 = sym.astype(np.int32)
        sym32.flags.writeable = False
        off.flags.writeable = False
        object.__setattr__(self, "symbols", sym32)
        object.__setattr__(self, "offsets", off)
        top = int(sym32.max()) if sym32.size else -1
        object.__setattr__(self, "max_symbol", top)
        as_bytes = None
        if top < BYTE_ALPHABET:
            as_bytes = np.zeros(sym32.size + 16, dtype=np.uint8)
            as_bytes[: sym32.size] = sym32
            as_bytes.flags.writeable = False
        object.__setattr__(self, "_bytes", as_bytes)

    def __len__(self) -> int:
        return int(self.offsets.size - 1)

    @property
    def lengths(self) -> npt.NDArray[np.int64]:
        """Length of every sequence."""
        return np.diff(self.offsets)

    @property
    def byte_symbols(self) -> npt.NDArray[np.uint8] | None:
        """The symbols as bytes plus 16 bytes of padding, or ``None`` if one is 255 or more."""
        return self._bytes

    def sequence(self, i: int) -> npt.NDArray[np.int32]:
        """Return sequence ``i`` (a read-only view)."""
        return self.symbols[self.offsets[i] : self.offsets[i + 1]]


def pack_sequences(sequences: Iterable[Sequence[int]] | np.ndarray) -> PackedSequences:
    """Pack a list of integer sequences into one flat array plus offsets.

    Args:
        sequences: an iterable of sequences (lists, tuples, 1-D arrays) of non-negative
            integer symbols, or a 2-D integer array (one sequence per row).

    Returns:
        The validated :class:`PackedSequences`.

    Raises:
        ValueError: an element is not a flat sequence of non-negative integers.
    """
    return pack(sequences, "sequences")


def pack(sequences: Any, name: str) -> PackedSequences:
    if isinstance(sequences, PackedSequences):
        return sequences
    if isinstance(sequences, str | bytes):
        raise ValueError(f"{name} must be a list of symbol sequences, not a string")
    if isinstance(sequences, np.ndarray):
        if sequences.ndim != 2:
            raise ValueError(
                f"{name}: a numpy array of sequences must be 2-D (one sequence per row), got "
                f"shape {sequences.shape}; use a list for sequences of different lengths"
            )
        rows, cols = sequences.shape
        flat = check_symbol_array(sequences.reshape(-1), name)
        return PackedSequences(flat, np.arange(rows + 1, dtype=np.int64) * cols)
    try:
        seqs = list(sequences)
    except TypeError:
        raise ValueError(
            f"{name} must be a list of symbol sequences, got {type(sequences).__name__}"
        ) from None
    # fast paths for lists/tuples of plain ints; None sends anything else to the careful path
    mod = compiled_module("_metrics")
    if mod is not None:
        arrays = mod.pack_lists(seqs, MAX_SYMBOL)
        if arrays is not None:
            return PackedSequences(*arrays)
    elif seqs and set(map(type, seqs)) <= {list, tuple}:
        packed = _pack_plain_lists(seqs)
        if packed is not None:
            return packed
    # the careful path: accepts arrays and integral floats, names the offending sequence
    sizes = [0]
    for i, seq in enumerate(seqs):
        try:
            if isinstance(seq, str | bytes | dict | set):
                raise TypeError
            sizes.append(len(seq))
        except TypeError:
            raise ValueError(
                f"{name}[{i}] must be a sequence of integer symbols, got {type(seq).__name__}"
            ) from None
    offsets = np.cumsum(np.array(sizes, dtype=np.int64))
    if offsets[-1] == 0:
        return PackedSequences(np.zeros(0, dtype=np.int32), offsets)
    if all(isinstance(s, np.ndarray) for s in seqs):
        for i, seq in enumerate(seqs):
            if seq.ndim != 1:
                raise ValueError(
                    f"{name}[{i}] must be a flat (1-D) sequence, got shape {seq.shape}"
                )
        flat_in: Any = np.concatenate(seqs)
    else:
        flat_in = list(itertools.chain.from_iterable(seqs))
    try:
        flat = np.asarray(flat_in)
    except (ValueError, TypeError):
        flat = np.asarray(flat_in, dtype=object)
    if flat.ndim != 1 or flat.dtype.kind not in "iubf":
        # find the offending sequence for a precise message
        for i, seq in enumerate(seqs):
            symbol_array(seq, f"{name}[{i}]")
        raise ValueError(f"{name} must hold flat sequences of integer symbols")
    try:
        flat = check_symbol_array(flat, name)
    except ValueError:
        for i, seq in enumerate(seqs):
            symbol_array(seq, f"{name}[{i}]")
        raise
    return PackedSequences(flat, offsets)


def _pack_plain_lists(seqs: list[Any]) -> PackedSequences | None:
    """Pure-Python twin of ``_metrics.pack_lists``; ``None`` if anything needs a closer look.

    ``array.array("q", ...)`` accepts only integers (no floats, strings or nested lists),
    so whatever it takes is a valid flat int64 array.
    """
    lengths = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
    try:
        buffer = array.array("q", itertools.chain.from_iterable(seqs))
    except (TypeError, OverflowError):
        return None
    flat = np.frombuffer(buffer, dtype=np.int64) if len(buffer) else np.zeros(0, np.int64)
    if flat.size and (flat.min() < 0 or flat.max() > MAX_SYMBOL):
        return None
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return PackedSequences(flat, offsets)
