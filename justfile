# Recipes of the msprobe suite. `./dev <recipe>` installs `just` first and runs it.
set shell := ["bash", "-euo", "pipefail", "-c"]
set positional-arguments := true

venv := env_var_or_default("MSPROBE_VENV", ".venv")
python := venv / "bin/python"
msprobe := venv / "bin/msprobe"
dist := env_var_or_default("MSPROBE_DIST", "dist")
# every shared/ and tools/*/ folder with a pyproject.toml, siblings first (.ci/suite.py)
packages := `python3 .ci/suite.py packages`
editable := `python3 .ci/suite.py packages --editable --extras`
step := "bash .ci/setup_step.sh " + venv

# List the recipes.
default:
    @just --list

# Install what `msprobe demo` needs: every package of the suite (editable) with its extras (torch, mindspore).
setup-demo:
    @test -x {{python}} || { echo "setup: creating the virtual environment {{venv}}"; python3 -m venv {{venv}}; }
    @{{step}} demo -r requirements-demo.txt {{editable}}

# Install the above and what the tests need (megatron-core, pytest, hypothesis, the docker SDK...).
setup: setup-demo
    @{{step}} test -r requirements-test.txt

# Run the main job on its built-in default: every tool on a tiny model (outputs in ./msprobe_demo).
demo: setup-demo
    {{msprobe}} demo -o msprobe_demo

# Start the docker daemon and build the MSAdapter rootfs the tests use.
services:
    bash .ci/dockerd.sh start
    bash dockerfiles/msadapter/build_rootfs.sh

# Set everything up and run the whole test suite (two workers: MSPROBE_TEST_WORKERS; 0 runs it in one process).
test: setup services
    {{python}} -m pytest -q -p no:cacheprovider -n "${MSPROBE_TEST_WORKERS:-2}" --dist loadgroup --durations 30

# Only the tests that need neither docker nor the MSAdapter rootfs.
test-fast: setup
    {{python}} -m pytest -q -m "not docker and not msadapter"

# Benchmarks (print ratios measured in one run).
bench: setup
    {{python}} bench/dump_overhead.py
    {{python}} bench/dump_breakdown.py
    {{python}} bench/config_check_compare.py
    {{python}} bench/ckpt_compare.py

# Build the wheel of every package into dist/ (installable with `pip install --find-links dist msprobe-<tool>`).
wheels:
    @mkdir -p {{dist}} && rm -f {{dist}}/msprobe_*.whl
    @echo "wheels: {{packages}} -> {{dist}}/"
    @{{python}} -m pip wheel -q --disable-pip-version-check --no-deps -w {{dist}} {{packages}} \
        2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
    @ls {{dist}}/msprobe_*.whl

# Set the suite's version (the file VERSION) in every pyproject.toml, with the packages' pins on each other.
version new:
    python3 .ci/suite.py set-version "$1"

# Build the base images, then msprobe/<tool>:<version> and :latest of every tool from dist/ (docker daemon).
# The MSAdapter image runs Python 3.9: it takes a pure-Python wheel of the dump (kernels are for the host's Python).
images: setup wheels
    bash .ci/dockerd.sh start
    bash dockerfiles/build_images.sh
    @MSPROBE_PURE_WHEEL=1 {{python}} -m pip wheel -q --disable-pip-version-check --no-deps -w {{dist}} ./tools/dump
    {{msprobe}} image build --dist {{dist}}

# Pack the environment and launch options of two launch scripts (or yaml files) and compare them.
env-diff a b out="env_diff":
    mkdir -p "$3"
    {{just_executable()}} _ms config_check "$3" config_check -d "$1" -o "$3/a.zip"
    {{just_executable()}} _ms config_check "$3" config_check -d "$2" -o "$3/b.zip"
    {{just_executable()}} _ms config_check "$3" config_check -c "$3/a.zip" "$3/b.zip" -o "$3/result"

# Compare two Megatron-LM / MindSpeed checkpoints of any layouts; the result as JSON in OUT.
ckpt-diff a b out="ckpt_diff.json":
    mkdir -p "$(dirname "$3")"
    {{just_executable()}} _ms ckpt_compare "$(dirname "$3")" config_check --compare "$1" "$2" -o "$3"

# From a dump to a verdict: first API with inf/nan (overflow_check) -> op_generate's script for it -> run it.
# Exit 0 with a verdict (the API alone agrees with the bench, differs without overflowing, or overflows where
# the bench does not: msprobe.op_generate.first_overflow reads its reports); non-zero when a step fails. A first
# event that is a collective (Distributed.*) is named, with why no script is run for it, and exit 0.
first-overflow dump out="first_overflow":
    #!/usr/bin/env bash
    set -euo pipefail
    dump="$1"
    mkdir -p "$2" && out=$(cd "$2" && pwd)
    {{just_executable()}} _ms overflow "$out" overflow_check -i "$dump" -o "$out/overflow" --json --quiet > "$out/overflow.json"
    origin=$({{python}} -m msprobe.op_generate.first_overflow origin "$out/overflow.json")
    if [ -z "$origin" ]; then echo "first-overflow: no inf/nan in $dump"; exit 0; fi
    echo "first-overflow: $origin"
    why=$({{python}} -m msprobe.op_generate.first_overflow alone "$out/overflow.json")
    if [ -n "$why" ]; then echo "first-overflow: $why"; exit 0; fi
    rm -rf "$out/op" "$out/op_result_output"  # this run's reports only: their absence tells a crash
    {{just_executable()}} _ms op_generate "$out" op_generate --from-overflow "$dump" -o "$out/op"
    script=$(find "$out/op" -name '*.py')
    echo "first-overflow: running $script (reports in $out/op_result_output)"
    status=0
    {{just_executable()}} --quiet _ms op_generate "$out" --exec python "$script" || status=$?
    exec {{python}} -m msprobe.op_generate.first_overflow verdict "$out/overflow.json" "$script" "$status" \
        "$out/op_result_output"

# `just _ms TOOL OUT ARGS...`: msprobe ARGS on this machine, or with IMAGE=1 in msprobe/TOOL (writable OUT).
[private]
_ms tool out *args:
    #!/usr/bin/env bash
    set -euo pipefail
    tool="$1" out="$2"; shift 2
    exec_cmd=0
    if [ "${1:-}" = --exec ]; then exec_cmd=1; shift; fi
    if [ "${IMAGE:-0}" = 1 ]; then
        if [ $exec_cmd = 1 ]; then exec {{msprobe}} run "$tool" -O "$out" --exec -- "$@"; fi
        exec {{msprobe}} run "$tool" -O "$out" -- "$@"
    fi
    if [ $exec_cmd = 1 ]; then  # in OUT, as in the image (its working directory): pass absolute paths
        python={{python}}; [[ $python = /* ]] || python="$PWD/$python"
        cd "$out"
        if [ "$1" = python ]; then shift; exec "$python" "$@"; fi
        exec "$@"
    fi
    exec {{msprobe}} "$@"

# Stop the docker daemon started by `just services`.
stop-services:
    bash .ci/dockerd.sh stop
