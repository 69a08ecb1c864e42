# cython: language_level=3
"""Compiled twin of :func:`driftlens_core.bootstrap._counts_numpy`.

Turns a chunk of resampling indices (replicates x questions, drawn by numpy so the
random stream is the same for both implementations) into question multiplicities,
written as float64 into a caller-owned buffer so the weighted sums are one BLAS matrix
product. Two plain (non-fused) entry points keep the per-call overhead to a few
microseconds (the bootstrap calls this once per chunk of 64 replicates); they share one
inline loop over a fused index type, which Cython compiles once per width.
The docstring of the reference lives in ``driftlens_core/bootstrap.py``.
"""

cimport numpy as cnp
from libc.string cimport memset

cnp.import_array()


ctypedef fused index_t:
    cnp.uint16_t
    cnp.uint32_t


cdef inline void _count_draws(const index_t[:, ::1] idx, double[:, ::1] out) noexcept nogil:
    """The loop of both entry points, specialised at compile time for each index width."""
    cdef Py_ssize_t n_rep = idx.shape[0]
    cdef Py_ssize_t n_draw = idx.shape[1]
    cdef Py_ssize_t n_clusters = out.shape[1]
    cdef Py_ssize_t b, i
    cdef double* row
    for b in range(n_rep):
        row = &out[b, 0]
        memset(row, 0, n_clusters * sizeof(double))
        for i in range(n_draw):
            row[idx[b, i]] += 1.0


def counts_u16(const cnp.uint16_t[:, ::1] idx, double[:, ::1] out):
    """``out[b, q]`` = how often cluster ``q`` was drawn in replicate ``b`` (16-bit indices)."""
    if out.shape[0] < idx.shape[0]:
        raise ValueError("out has fewer rows than idx")
    with nogil:
        _count_draws(idx, out)


def counts_u32(const cnp.uint32_t[:, ::1] idx, double[:, ::1] out):
    """``out[b, q]`` = how often cluster ``q`` was drawn in replicate ``b`` (32-bit indices)."""
    if out.shape[0] < idx.shape[0]:
        raise ValueError("out has fewer rows than idx")
    with nogil:
        _count_draws(idx, out)
