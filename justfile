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

# `./dev RECIPE --help` prints a recipe's [doc] line, its usage and the comment above it (the dev script).

[doc("List the recipes.")]
default:
    @just --list

[doc("Install what `msprobe demo` needs: every package of the suite (editable) with its extras (torch, mindspore).")]
setup-demo:
    @test -x {{python}} || { echo "setup: creating the virtual environment {{venv}}"; python3 -m venv {{venv}}; }
    @{{step}} demo -r requirements-demo.txt {{editable}}

[doc("Install setup-demo's packages and what the tests need (megatron-core, pytest, hypothesis, the docker SDK...).")]
setup: setup-demo
    @{{step}} test -r requirements-test.txt

[doc("Run every installed tool on a built-in tiny model (outputs in ./msprobe_demo); a part that cannot run says why.")]
demo: setup-demo
    {{msprobe}} demo -o msprobe_demo

[doc("Start the docker daemon and build the MSAdapter rootfs the tests use.")]
services:
    bash .ci/dockerd.sh start
    bash dockerfiles/msadapter/build_rootfs.sh

[doc("Set everything up and run the whole test suite (two workers: MSPROBE_TEST_WORKERS; 0 runs it in one process).")]
test: setup services
    {{python}} -m pytest -q -p no:cacheprovider -n "${MSPROBE_TEST_WORKERS:-2}" --dist loadgroup --durations 30

[doc("Run the tests that need neither docker nor the MSAdapter rootfs.")]
test-fast: setup
    {{python}} -m pytest -q -m "not docker and not msadapter"

[doc("Run the benchmarks of bench/: dump overhead and breakdown, config_check and ckpt_compare speed (ratios of one run).")]
bench: setup
    {{python}} bench/dump_overhead.py
    {{python}} bench/dump_breakdown.py
    {{python}} bench/config_check_compare.py
    {{python}} bench/ckpt_compare.py

[doc("Build the wheel of every package into dist/ (installable with `pip install --find-links dist msprobe-<tool>`).")]
wheels:
    @mkdir -p {{dist}} && rm -f {{dist}}/msprobe_*.whl
    @echo "wheels: {{packages}} -> {{dist}}/"
    @{{python}} -m pip wheel -q --disable-pip-version-check --no-deps -w {{dist}} {{packages}} \
        2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
    @ls {{dist}}/msprobe_*.whl

[doc("Set the suite's version (the file VERSION) in every pyproject.toml, with the packages' pins on each other.")]
[arg("new", help="the version, X.Y.Z")]
version new:
    python3 .ci/suite.py set-version "$1"

# The dump's wheel (cp39-abi3, its kernels on Python's stable ABI) serves the MSAdapter image's Python 3.9 too.
[doc("Build the base images, then msprobe/<tool>:<version> and :latest of every tool from dist/ (docker daemon).")]
images: setup wheels
    bash .ci/dockerd.sh start
    bash dockerfiles/build_images.sh
    {{msprobe}} image build --dist {{dist}}

# Each pack holds what its script exports (and its `env VAR=...` prefixes) over this shell's environment, the
# libraries installed here, and the options of its launch commands; the comparison prints one line per item
# (env, pip, hyperparameters...: pass / warning / error, and what differs), the workbook and JSON in OUT/result.
[doc("Pack the environment and options of two launch scripts (or yaml files), compare them, print what differs.")]
[arg("a", help="the bench's launch script (.sh) or yaml file")]
[arg("b", help="the launch script or yaml file to compare with it")]
[arg("out", help="folder for a.zip, b.zip and the result (replaced by the next run)")]
[no-exit-message]
env-diff a b out="msprobe_out/env_diff":
    @mkdir -p "$3"
    @{{just_executable()}} _ms config_check "$3" config_check -d "$1" -o "$3/a.zip"
    @{{just_executable()}} _ms config_check "$3" config_check -d "$2" -o "$3/b.zip"
    @{{just_executable()}} _ms config_check "$3" config_check -c "$3/a.zip" "$3/b.zip" -o "$3/result"

# Checkpoints are matched parameter by parameter whatever their tensor/pipeline parallel layouts and names
# (mcore or legacy): prints the worst cosine and the parameters that differ; OUT holds l2 and cos of each.
[doc("Compare two Megatron-LM / MindSpeed checkpoints of any parallel layouts; l2 and cos per parameter in OUT.")]
[arg("a", help="the first checkpoint folder (the one holding latest_checkpointed_iteration.txt, or an iter_N)")]
[arg("b", help="the second checkpoint folder")]
[arg("out", help="the JSON file to write")]
[no-exit-message]
ckpt-diff a b out="msprobe_out/ckpt_diff.json":
    @mkdir -p "$(dirname "$3")"
    @{{just_executable()}} _ms ckpt_compare "$(dirname "$3")" config_check --compare "$1" "$2" -o "$3"

# From a dump to a verdict: first API with inf/nan (overflow_check) -> op_generate's script for it -> run it.
# Exit 0 with a verdict (the API alone agrees with the bench, differs without overflowing, or overflows where
# the bench does not: msprobe.op_generate.first_overflow reads its reports); non-zero when a step fails. A first
# event that is a collective (Distributed.*) is named, with why no script is run for it, and exit 0. A dump whose
# only inf/nan is expected (masks...) is said to be so, with how many tensors were left out and why.
[doc("Find a dump's first API with inf/nan and run it alone (op_generate) against a torch CPU bench: the verdict.")]
[arg("dump", help="a statistics or tensor dump: dump.json, rank, step or whole dump tree")]
[arg("out", help="folder for overflow_check's report, the generated script and its reports")]
[no-exit-message]
first-overflow dump out="msprobe_out/first_overflow":
    #!/usr/bin/env bash
    set -euo pipefail
    dump="$1"
    mkdir -p "$2" && out=$(cd "$2" && pwd)
    {{just_executable()}} _ms overflow "$out" overflow_check -i "$dump" -o "$out/overflow" --json --quiet > "$out/overflow.json"
    origin=$({{python}} -m msprobe.op_generate.first_overflow origin "$out/overflow.json")
    if [ -z "$origin" ]; then exec {{python}} -m msprobe.op_generate.first_overflow nothing "$out/overflow.json" "$dump"; fi
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
[no-exit-message]
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

[doc("Stop the docker daemon started by `just services`.")]
stop-services:
    bash .ci/dockerd.sh stop
