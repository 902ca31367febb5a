#!/usr/bin/env bash
# Build (once, cached) a Debian bullseye rootfs with Python 3.9 + mindspore 2.0.0 + msadapter 0.1.0,
# and torch 1.12.1 for Python 3.9 (op_generate's bench beside MSAdapter; it runs on the CPU).
#
# Result: $MSPROBE_CACHE/rootfs/bullseye-msadapter   (MSPROBE_CACHE defaults to $HOME/.cache/msprobe)
# A stamp file <rootfs>/.msprobe-complete marks a finished build; when it exists and matches
# this script's package list the script exits at once. Use --force to rebuild.
#
# Steps: debootstrap bullseye (minbase + python3 pip venv libgomp1 ca-certificates), pip download
# the Python 3.9 wheels on the host into $MSPROBE_CACHE/wheelhouse/py39, then pip install them
# offline inside the rootfs via chroot in a private mount namespace (unshare -m) so no mount leaks.
# torch: 1.12.1 is the last PyPI build for cp39 that carries its CUDA libraries inside the wheel (776 MB,
# imports without a GPU); later ones pull in gigabytes of nvidia-* wheels. Debian's python3-torch 1.7
# cannot share a process with mindspore (both load their own oneDNN and OpenCV: undefined symbols).
# Two builds at once (two test sessions) take turns on a lock file beside the rootfs; the second
# finds the first's stamp and exits.
# Needs root, debootstrap, unshare (util-linux) and network access to a Debian mirror and PyPI.
set -euo pipefail

CACHE="${MSPROBE_CACHE:-$HOME/.cache/msprobe}"
ROOTFS="${MSADAPTER_ROOTFS:-$CACHE/rootfs/bullseye-msadapter}"
WHEELHOUSE="$CACHE/wheelhouse/py39"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
STAMP="$ROOTFS/.msprobe-complete"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

APT_PKGS="python3,python3-pip,python3-venv,libgomp1,ca-certificates"
PY_PKGS=(msadapter==0.1.0 mindspore==2.0.0 "numpy<1.25" "pillow<10" "protobuf<4" typing_extensions pyyaml typer pytest)
PY_TORCH=(torch==1.12.1)
STAMP_CONTENT="bullseye ${APT_PKGS} ${PY_PKGS[*]} ${PY_TORCH[*]}"
# pip download evaluates environment markers with the host interpreter (3.11), so the py<3.11 backports
# that pytest needs are not pulled in by themselves: list them explicitly
PY_BACKPORTS=(exceptiongroup tomli)

log() { echo "[build_rootfs] $*" >&2; }
die() { echo "[build_rootfs] error: $*" >&2; exit 1; }

mkdir -p "$CACHE/rootfs"
exec 9>"$CACHE/rootfs/.build.lock"
if ! flock -n 9; then
    log "another build holds $CACHE/rootfs/.build.lock; waiting for it"
    flock 9
fi

if [[ $FORCE -eq 0 && -f "$STAMP" && "$(cat "$STAMP")" == "$STAMP_CONTENT" ]]; then
    log "rootfs complete (cached): $ROOTFS"
    echo "$ROOTFS"
    exit 0
fi

[[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap and chroot need it)"
command -v debootstrap >/dev/null || die "debootstrap not found; run: apt-get install -y debootstrap"
command -v unshare >/dev/null || die "unshare not found; run: apt-get install -y util-linux"

START=$(date +%s)
mkdir -p "$CACHE/rootfs" "$WHEELHOUSE"

# 1. debootstrap (the base part has its own stamp so a failed pip step does not redo it)
BASE_STAMP="$ROOTFS/.msprobe-base-complete"
if [[ $FORCE -eq 1 || ! -f "$BASE_STAMP" ]]; then
    rm -rf "$ROOTFS"
    log "debootstrap bullseye -> $ROOTFS"
    debootstrap --variant=minbase --include="$APT_PKGS" bullseye "$ROOTFS" "$MIRROR" \
        > "$CACHE/rootfs/debootstrap-bullseye.log" 2>&1 \
        || die "debootstrap failed, see $CACHE/rootfs/debootstrap-bullseye.log"
    # keep the rootfs small: drop apt lists and package cache
    rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
    touch "$BASE_STAMP"
fi

# 2. wheels for CPython 3.9 / manylinux x86_64, downloaded on the host (pip download is cached too)
log "pip download py39 wheels -> $WHEELHOUSE"
PIP_HOST=(python3 -m pip)
python3 -m pip --version >/dev/null 2>&1 || die "host python3 has no pip; run: apt-get install -y python3-pip"
"${PIP_HOST[@]}" download --quiet --dest "$WHEELHOUSE" \
    --only-binary=:all: --python-version 3.9 --implementation cp --abi cp39 --abi abi3 --abi none \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux2010_x86_64 --platform manylinux1_x86_64 --platform any \
    "${PY_PKGS[@]}" 2> >(grep -v "is ignored: it is neither" >&2) \
    || die "pip download of py39 wheels failed"
# separately and without deps: resolving them together with the rest makes pip backtrack for minutes
"${PIP_HOST[@]}" download --quiet --dest "$WHEELHOUSE" --no-deps \
    --only-binary=:all: --python-version 3.9 --implementation cp --abi cp39 --abi none --platform any \
    "${PY_BACKPORTS[@]}" 2> >(grep -v "is ignored: it is neither" >&2) \
    || die "pip download of py39 backport wheels failed"
# torch alone and without deps (its one dependency, typing_extensions, is in PY_PKGS)
"${PIP_HOST[@]}" download --quiet --dest "$WHEELHOUSE" --no-deps \
    --only-binary=:all: --python-version 3.9 --implementation cp --abi cp39 \
    --platform manylinux1_x86_64 --platform manylinux2014_x86_64 \
    "${PY_TORCH[@]}" 2> >(grep -v "is ignored: it is neither" >&2) \
    || die "pip download of the py39 torch wheel failed"

# 3. offline pip install inside the chroot
log "pip install inside rootfs (offline, from wheelhouse)"
unshare -m --propagation private -- /bin/bash -euo pipefail -c '
    R="$1"; WH="$2"; shift 2
    mount -t proc proc "$R/proc"
    mount --rbind /dev "$R/dev"
    mkdir -p "$R/wheelhouse"
    mount --bind "$WH" "$R/wheelhouse"
    chroot "$R" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 PIP_DISABLE_PIP_VERSION_CHECK=1 \
        python3.9 -m pip install --no-index --find-links /wheelhouse --no-cache-dir -q "$@"
' _ "$ROOTFS" "$WHEELHOUSE" "${PY_PKGS[@]}" "${PY_TORCH[@]}" || die "pip install inside rootfs failed"
rmdir "$ROOTFS/wheelhouse" 2>/dev/null || true

# 4. smoke check: both frameworks import, and torch beside them
unshare -m --propagation private -- /bin/bash -euo pipefail -c '
    R="$1"
    mount -t proc proc "$R/proc"
    chroot "$R" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
        python3.9 -c "import mindspore, msadapter.pytorch as t, torch; print(\"mindspore\", mindspore.__version__, \"msadapter ok\", t.ones(2).shape, \"torch\", torch.__version__)"
' _ "$ROOTFS" >&2 || die "smoke import of mindspore/msadapter in rootfs failed"

echo "$STAMP_CONTENT" > "$STAMP"
log "done in $(( $(date +%s) - START ))s, size $(du -sh "$ROOTFS" | cut -f1)"
echo "$ROOTFS"
