"""Build the compiled core: every ``driftlens_core/_*.pyx`` becomes an extension.

Globbing keeps the list in one place: adding a kernel means adding a ``.pyx`` file.
"""

from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent
extensions = [
    Extension(
        f"driftlens_core.{pyx.stem}",
        [str(pyx.relative_to(HERE))],
        include_dirs=[np.get_include()],
        extra_compile_args=["-O3", "-fno-strict-aliasing"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for pyx in sorted((HERE / "driftlens_core").glob("_*.pyx"))
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    )
)
