"""Run inside a base image: can it carry an msprobe tool? Exit 1 with one line on stderr naming what is missing.

argv: modules the base must import (its framework, e.g. torch torch_npu). On success prints
``ok python=3.11 machine=x86_64 glibc=2.36``, what the host needs to fetch wheels for the base.
"""
import importlib
import platform
import sys


def main(modules):
    if sys.version_info < (3, 9):
        return "python %d.%d is older than 3.9" % sys.version_info[:2]
    for needed, why in (("venv", "the venv module"), ("ensurepip", "ensurepip (Debian: python3-venv)")):
        try:
            importlib.import_module(needed)
        except ImportError:
            return "python3 lacks %s" % why
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # a framework that fails to import for any reason cannot be used
            return "framework module %r does not import: %s" % (name, str(exc).splitlines()[0] if str(exc) else exc)
    libc, version = platform.libc_ver()
    if libc != "glibc":
        return "no glibc found (wheels for manylinux need it)"
    return None


if __name__ == "__main__":
    problem = main(sys.argv[1:])
    if problem:
        print("missing: " + problem, file=sys.stderr)
        sys.exit(1)
    print("ok python=%d.%d machine=%s glibc=%s" % (sys.version_info[0], sys.version_info[1], platform.machine(),
                                                    platform.libc_ver()[1]))
