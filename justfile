# Recipes of the msprobe suite. `./dev <recipe>` installs `just` first and runs it.
set shell := ["bash", "-euo", "pipefail", "-c"]

venv := env_var_or_default("MSPROBE_VENV", ".venv")
python := venv / "bin/python"
tools := "./shared ./tools/dump ./tools/overflow ./tools/config_check ./tools/ckpt_compare"

# List the recipes.
default:
    @just --list

# Create the virtual environment and install every tool and what the tests need.
setup:
    test -x {{python}} || python3 -m venv {{venv}}
    {{python}} -m pip install -q --disable-pip-version-check -r requirements-test.txt
    {{python}} -m pip install -q --disable-pip-version-check --force-reinstall --no-deps {{tools}}
    {{python}} -m pip install -q --disable-pip-version-check {{tools}}

# Run the main job on its built-in default: every tool on a tiny model (outputs in ./msprobe_demo).
demo: setup
    {{venv}}/bin/msprobe demo -o msprobe_demo

# Start the docker daemon and build the MSAdapter rootfs the tests use.
services:
    bash .ci/dockerd.sh start
    bash dockerfiles/msadapter/build_rootfs.sh

# Set everything up and run the whole test suite.
test: setup services
    {{python}} -m pytest -q -p no:cacheprovider

# Only the tests that need neither docker nor the MSAdapter rootfs.
test-fast: setup
    {{python}} -m pytest -q -m "not docker and not msadapter"

# Benchmarks (print ratios measured in one run).
bench: setup
    {{python}} bench/dump_overhead.py
    {{python}} bench/dump_breakdown.py
    {{python}} bench/config_check_compare.py
    {{python}} bench/ckpt_compare.py

# Build the container image of every tool (docker daemon from `just services`).
images: setup
    bash .ci/dockerd.sh start
    bash dockerfiles/build_images.sh

# Stop the docker daemon started by `just services`.
stop-services:
    bash .ci/dockerd.sh stop
