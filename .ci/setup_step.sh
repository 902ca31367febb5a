#!/usr/bin/env bash
# One setup step: pip install ARGS into VENV, said in one line, skipped when nothing it depends on changed.
#   .ci/setup_step.sh VENV NAME PIP_INSTALL_ARGS...
# The stamp VENV/.msprobe-setup-NAME holds a hash of the arguments, the Python version and the contents of
# VERSION, every pyproject.toml and requirements-*.txt; the suite's packages are installed editable, so a
# source change needs no reinstall, only a change of what is installed does.
set -euo pipefail
VENV="$1"; NAME="$2"; shift 2
STAMP="$VENV/.msprobe-setup-$NAME"

key() {
    {
        printf '%s\n' "$@"
        "$VENV/bin/python" -VV
        cat VERSION shared/pyproject.toml tools/*/pyproject.toml requirements-*.txt 2>/dev/null
    } | sha256sum | cut -d' ' -f1
}

what() {  # the packages the arguments name, with -r files expanded to their lines
    local arg next=0 out=()
    for arg in "$@"; do
        if [[ $next -eq 1 ]]; then
            out+=($(grep -v -e '^\s*#' -e '^\s*-r' -e '^\s*$' "$arg" | sed 's/\s*#.*//'))
            next=0
        elif [[ "$arg" == -r ]]; then next=1
        elif [[ "$arg" != -* ]]; then out+=("$arg")
        fi
    done
    echo "${out[*]}"
}

KEY="$(key "$@")"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$KEY" ]]; then
    echo "setup: $NAME: up to date, nothing installed (remove $STAMP to force)"
    exit 0
fi
echo "setup: $NAME: pip install $(what "$@")"
start=$SECONDS
rm -f "$STAMP"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "$@" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
echo "$KEY" > "$STAMP"
echo "setup: $NAME: done in $((SECONDS - start)) s"
