"""Builds the dump's numeric kernels (src/msprobe/dump/_kernels.c) with the package; everything else is
declared in pyproject.toml. The extension is optional so that an install without a C compiler still works:
msprobe.dump.kernels then says once, at first use, what is slower. ``MSPROBE_PURE_WHEEL=1`` builds a
pure-Python wheel on purpose (for an interpreter other than the building one, as the MSAdapter test root
filesystem's Python 3.9)."""
import os

from setuptools import Extension, setup

KERNELS = Extension("msprobe.dump._kernels", ["src/msprobe/dump/_kernels.c"],
                    extra_compile_args=["-O3", "-fno-strict-aliasing"], libraries=["m"], optional=True)

setup(ext_modules=[] if os.environ.get("MSPROBE_PURE_WHEEL") == "1" else [KERNELS])
