#!/usr/bin/env bash
# Build the msprobe docker images without Docker Hub and with no network during `docker build`.
#
#   dockerfiles/build_images.sh [image...]      images: base msadapter dump overflow config_check ckpt_compare
#                                               (default: all). Tool images imply base.
#
#   msprobe-base:py311        debootstrap bookworm minbase + python3 python3-pip python3-venv, `docker import`ed
#                             (tarball cached as $MSPROBE_CACHE/images/bookworm-py311.tar)
#   msprobe-msadapter:py39    the bullseye rootfs of dockerfiles/msadapter/build_rootfs.sh (py3.9, mindspore 2.0.0,
#                             msadapter 0.1.0), `docker import`ed
#   msprobe-<tool>:latest     from dockerfiles/tool.Dockerfile on msprobe-base:py311: repo packages (shared first)
#                             as wheels built on the host + third-party wheels from `pip download` on the host
#                             ($MSPROBE_CACHE/wheelhouse/<tool>), `docker build --network none`.
#                             A tool whose tools/<tool>/pyproject.toml is missing is skipped
#                             (op_generate, not built yet). A tool with dockerfiles/<tool>/uses-torch is built on
#   msprobe-torch:py311       msprobe-base + venv /opt/msprobe with torch 2.13.0+cpu (dockerfiles/torch/), so the
#                             torch layer is shared (dump, ckpt_compare).
# Everything is cached under ${MSPROBE_CACHE:-$HOME/.cache/msprobe}; an unchanged input is not rebuilt.
# Starts dockerd via .ci/dockerd.sh when no daemon answers.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
CACHE="${MSPROBE_CACHE:-$HOME/.cache/msprobe}"
export MSPROBE_CACHE="$CACHE"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
export DOCKER_BUILDKIT=0   # no buildx plugin here; the classic builder does --network none builds
ALL_TOOLS=(dump overflow config_check ckpt_compare)

log() { echo "[build_images] $*" >&2; }
die() { echo "[build_images] error: $*" >&2; exit 1; }

image_label() {  # image label -> value or empty
    docker image inspect -f "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null || true
}

host_python() {  # a python with hatchling, so repo wheels build without an isolated env each time
    local py
    for py in "${MSPROBE_HOST_PYTHON:-}" "$REPO/.venv/bin/python" "$CACHE/buildenv/bin/python"; do
        if [[ -n "$py" && -x "$py" ]] && "$py" -c "import hatchling" 2>/dev/null; then echo "$py"; return 0; fi
    done
    log "creating $CACHE/buildenv (hatchling) for building the repo wheels"
    python3 -m venv "$CACHE/buildenv" && "$CACHE/buildenv/bin/python" -m pip install --quiet "hatchling>=1.18" \
        2> >(grep -v "is ignored: it is neither" >&2) \
        || die "cannot create the wheel-building venv $CACHE/buildenv"
    echo "$CACHE/buildenv/bin/python"
}

# ---------------------------------------------------------------- msprobe-base:py311
build_base() {
    local tar="$CACHE/images/bookworm-py311.tar" dir="$CACHE/images/bookworm-py311"
    mkdir -p "$CACHE/images"
    if [[ ! -f "$tar" ]]; then
        [[ $(id -u) -eq 0 ]] || die "debootstrap needs root"
        command -v debootstrap >/dev/null || die "debootstrap not found; run: apt-get install -y debootstrap"
        log "debootstrap bookworm minbase -> $dir"
        rm -rf "$dir"
        debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,ca-certificates \
            bookworm "$dir" "$MIRROR" > "$CACHE/images/debootstrap-bookworm.log" 2>&1 \
            || die "debootstrap bookworm failed, see $CACHE/images/debootstrap-bookworm.log"
        rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
        tar --numeric-owner -C "$dir" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
        rm -rf "$dir"
    fi
    local key
    key="$(stat -c '%s-%Y' "$tar")"
    if [[ "$(image_label msprobe-base:py311 msprobe.source)" == "$key" ]]; then
        log "msprobe-base:py311 up to date"
        return 0
    fi
    log "docker import $tar -> msprobe-base:py311"
    docker import --change "LABEL msprobe.source=$key" --change "ENV LANG=C.UTF-8" \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]' "$tar" msprobe-base:py311 >/dev/null \
        || die "docker import of the bookworm base failed"
}

# ---------------------------------------------------------------- msprobe-msadapter:py39
build_msadapter() {
    local rootfs
    rootfs="$(bash "$HERE/msadapter/build_rootfs.sh")" || die "building the msadapter rootfs failed"
    local key
    key="$(stat -c '%Y' "$rootfs/.msprobe-complete")"
    if [[ "$(image_label msprobe-msadapter:py39 msprobe.source)" == "$key" ]]; then
        log "msprobe-msadapter:py39 up to date"
        return 0
    fi
    log "docker import $rootfs -> msprobe-msadapter:py39"
    tar --numeric-owner -C "$rootfs" --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* -c . \
        | docker import --change "LABEL msprobe.source=$key" --change "ENV LANG=C.UTF-8" \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'CMD ["/usr/bin/python3.9"]' - msprobe-msadapter:py39 >/dev/null \
        || die "docker import of the msadapter rootfs failed"
}

# ---------------------------------------------------------------- helpers for docker-built images
download_wheels() {  # requirements.txt wheelhouse: CPython 3.11 manylinux wheels, only when the requirements change
    local reqfile="$1" wh="$2"
    mkdir -p "$wh"
    [[ -s "$reqfile" ]] || return 0
    if [[ -f "$wh/.requirements" ]] && cmp -s "$wh/.requirements" "$reqfile"; then return 0; fi
    log "pip download -> $wh"
    rm -f "$wh"/*.whl   # stale wheels would end up in the image's COPY layer
    python3 -m pip download --quiet --dest "$wh" --only-binary=:all: \
        --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux2010_x86_64 --platform manylinux1_x86_64 --platform any \
        -r "$reqfile" 2> >(grep -v "is ignored: it is neither" >&2) \
        || die "pip download of $reqfile failed"
    cp "$reqfile" "$wh/.requirements"
}

stage_wheels() {  # wheelhouse dir: hard-link (or copy) its wheels into the build context
    local wh="$1" dir="$2" wheels
    mkdir -p "$dir"
    shopt -s nullglob
    wheels=("$wh"/*.whl)
    shopt -u nullglob
    [[ ${#wheels[@]} -gt 0 ]] || return 0
    cp -al "${wheels[@]}" "$dir/" 2>/dev/null || cp "${wheels[@]}" "$dir/"
}

docker_build() {  # name dockerfile context [docker build args...]
    local name="$1" dockerfile="$2" stage="$3"
    shift 3
    log "docker build $name (network none)"
    docker build --network none --quiet "$@" -t "$name" -f "$dockerfile" "$stage" >/dev/null \
        2> >(grep -v -e '^DEPRECATED: The legacy builder' -e 'BuildKit is currently disabled' \
                     -e '^ *environment-variable\.$' -e '^$' >&2) \
        || die "docker build of $name failed (rerun without --quiet: docker build --network none -f $dockerfile $stage)"
    log "$name built"
}

# ---------------------------------------------------------------- msprobe-torch:py311 (shared torch layer)
TORCH_BUILT=0
build_torch() {
    [[ $TORCH_BUILT -eq 1 ]] && return 0
    local stage="$CACHE/build/torch"
    rm -rf "$stage"
    mkdir -p "$stage/third"
    grep -v '^#' "$HERE/torch/requirements.txt" > "$stage/requirements.txt"
    download_wheels "$stage/requirements.txt" "$CACHE/wheelhouse/torch"
    stage_wheels "$CACHE/wheelhouse/torch" "$stage/third"
    docker_build msprobe-torch:py311 "$HERE/torch/Dockerfile" "$stage"
    TORCH_BUILT=1
}

# ---------------------------------------------------------------- msprobe-<tool>
build_tool() {
    local tool="$1" name="msprobe-${1//_/-}"
    local dockerfile="$HERE/tool.Dockerfile"  # one recipe for every tool: only the packages differ
    local dirs=()
    if [[ -f "$REPO/tools/$tool/pyproject.toml" ]]; then
        dirs=("tools/$tool")
    else
        log "skip $name: tools/$tool/pyproject.toml missing"
        return 0
    fi
    local py info
    py="$(host_python)"
    info="$(python3 "$HERE/pkginfo.py" "$REPO" "${dirs[@]}")" || die "cannot read the pyproject files for $tool"
    local locals=() reqs=() base_args=() uses_torch=0 kind value
    [[ -f "$HERE/$tool/uses-torch" ]] && uses_torch=1
    while read -r kind value; do
        [[ "$kind" == local ]] && locals+=("$value")
        if [[ "$kind" == req ]]; then
            # on msprobe-torch:py311, torch (2.13.0+cpu) is already there: a `torch>=…` here would make
            # pip download fetch the CUDA build from PyPI
            if [[ $uses_torch -eq 1 && "$value" =~ ^[Tt]orch([^A-Za-z0-9_.-]|$) ]]; then continue; fi
            reqs+=("$value")
        fi
    done <<< "$info"
    if [[ $uses_torch -eq 1 ]]; then
        build_torch
        base_args=(--build-arg BASE=msprobe-torch:py311)
    fi

    local stage="$CACHE/build/$tool" wh="$CACHE/wheelhouse/$tool"
    rm -rf "$stage"
    mkdir -p "$stage/third" "$stage/local"
    if [[ ${#reqs[@]} -gt 0 ]]; then printf '%s\n' "${reqs[@]}" > "$stage/requirements.txt"; else : > "$stage/requirements.txt"; fi
    download_wheels "$stage/requirements.txt" "$wh"
    stage_wheels "$wh" "$stage/third"

    # repo packages as wheels (hatchling builds are reproducible, so unchanged sources hit docker's cache)
    local rel
    for rel in "${locals[@]}"; do
        "$py" -m pip wheel --quiet --no-deps --no-build-isolation -w "$stage/local" "$REPO/$rel" \
            || die "building the wheel of $rel failed"
    done
    docker_build "$name:latest" "$dockerfile" "$stage" "${base_args[@]}"
}

main() {
    local wanted=("$@")
    [[ ${#wanted[@]} -gt 0 ]] || wanted=(base msadapter "${ALL_TOOLS[@]}")
    local item need_base=0
    for item in "${wanted[@]}"; do
        case "$item" in
            base|dump|overflow|config_check|ckpt_compare) need_base=1 ;;
            msadapter) ;;
            *) die "unknown image '$item' (expected: base msadapter ${ALL_TOOLS[*]})" ;;
        esac
    done
    bash "$REPO/.ci/dockerd.sh" start
    local start=$SECONDS
    [[ $need_base -eq 1 ]] && build_base
    for item in "${wanted[@]}"; do
        case "$item" in
            base) ;;
            msadapter) build_msadapter ;;
            *) build_tool "$item" ;;
        esac
    done
    # drop the dangling images that rebuilds leave behind (ours all carry the base's msprobe.source label)
    docker image prune -f --filter label=msprobe.source >/dev/null 2>&1 || true
    log "done in $((SECONDS - start))s"
}

main "$@"
