"""Builds the dump's numeric kernels (src/msprobe/dump/_kernels.c) with the package; everything else is
declared in pyproject.toml. The extension is optional so that an install without a C compiler still works:
msprobe.dump.kernels then says once, at first use, what is slower. It uses only the stable ABI of Python
3.9, so one wheel (``cp39-abi3``) serves every interpreter from 3.9 on: the MSAdapter image's Python 3.9
takes the wheel built on the host's. ``MSPROBE_PURE_WHEEL=1`` builds a pure-Python wheel on purpose (the
no-compiler case, tested in the MSAdapter root filesystem)."""
import os

from setuptools import Extension, setup

KERNELS = Extension("msprobe.dump._kernels", ["src/msprobe/dump/_kernels.c"],
                    extra_compile_args=["-O3", "-fno-strict-aliasing"], libraries=["m"], optional=True,
                    define_macros=[("Py_LIMITED_API", "0x03090000")], py_limited_api=True)

if os.environ.get("MSPROBE_PURE_WHEEL") == "1":
    setup(ext_modules=[])
else:
    setup(ext_modules=[KERNELS], options={"bdist_wheel": {"py_limited_api": "cp39"}})
