# cython: language_level=3
"""Compiled twin of :func:`driftlens_core.bootstrap._counts_numpy`.

Turns a chunk of resampling indices (replicates x questions, drawn by numpy so the
random stream is the same for both implementations) into question multiplicities,
written as float64 so the weighted sums are one BLAS matrix product.
The docstring of the reference lives in ``driftlens_core/bootstrap.py``.
"""

import numpy as np
cimport numpy as cnp
from libc.string cimport memset

cnp.import_array()

ctypedef fused index_t:
    cnp.uint16_t
    cnp.uint32_t
    cnp.int64_t


def counts_from_indices(const index_t[:, ::1] idx, Py_ssize_t n_clusters):
    """Return ``counts[b, q]`` = how often cluster ``q`` was drawn in replicate ``b``."""
    cdef Py_ssize_t n_rep = idx.shape[0]
    cdef Py_ssize_t n_draw = idx.shape[1]
    cdef Py_ssize_t b, i
    cdef cnp.ndarray[cnp.float64_t, ndim=2] out = np.empty((n_rep, n_clusters), dtype=np.float64)
    cdef double[:, ::1] counts = out
    cdef double* row
    with nogil:
        for b in range(n_rep):
            row = &counts[b, 0]
            memset(row, 0, n_clusters * sizeof(double))
            for i in range(n_draw):
                row[idx[b, i]] += 1.0
    return out
