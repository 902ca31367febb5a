#!/usr/bin/env bash
# Build the base images of the msprobe tool images, without Docker Hub and with no network during `docker build`.
#
#   dockerfiles/build_images.sh [image...]      images: base torch msadapter (default: all)
#
#   msprobe/base:py311             debootstrap bookworm minbase + python3 python3-pip python3-venv, `docker import`ed
#                                  (tarball cached as $MSPROBE_CACHE/images/bookworm-py311.tar)
#   msprobe/base-torch:2.13.0-cpu  base + torch 2.13.0+cpu in the system Python (dockerfiles/torch/), multi-stage
#   msprobe/base-msadapter:py39    the bullseye rootfs of dockerfiles/msadapter/build_rootfs.sh (py3.9, mindspore
#                                  2.0.0, msadapter 0.1.0) without its torch, `docker import`ed
# The tool images (msprobe/<tool>) are built on these by `msprobe image build` (tools/launcher) from dist/.
# Everything is cached under ${MSPROBE_CACHE:-$HOME/.cache/msprobe}; an unchanged input is not rebuilt.
# Starts dockerd via .ci/dockerd.sh when no daemon answers.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
CACHE="${MSPROBE_CACHE:-$HOME/.cache/msprobe}"
export MSPROBE_CACHE="$CACHE"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
export DOCKER_BUILDKIT=0   # no buildx plugin here; the classic builder does --network none builds
ALL_IMAGES=(base torch msadapter)

log() { echo "[build_images] $*" >&2; }
die() { echo "[build_images] error: $*" >&2; exit 1; }

image_label() {  # image label -> value or empty
    docker image inspect -f "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null || true
}

unmount_below() {  # dir: unmount what an interrupted build left mounted in it, deepest first, so rm -rf can work
    local mnt
    awk -v d="$1" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/mounts | sort -r \
        | while read -r mnt; do umount -l "$mnt" || die "cannot unmount $mnt"; done
}

# ---------------------------------------------------------------- msprobe/base:py311
build_base() {
    local tar="$CACHE/images/bookworm-py311.tar" dir="$CACHE/images/bookworm-py311"
    mkdir -p "$CACHE/images"
    if [[ ! -f "$tar" ]]; then
        [[ $(id -u) -eq 0 ]] || die "debootstrap needs root"
        command -v debootstrap >/dev/null || die "debootstrap not found; run: apt-get install -y debootstrap"
        log "debootstrap bookworm minbase -> $dir"
        unmount_below "$dir"
        rm -rf "$dir"
        # a private mount namespace: the proc debootstrap mounts in the target goes when it ends, even if it fails
        unshare -m --propagation private debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,ca-certificates \
            bookworm "$dir" "$MIRROR" > "$CACHE/images/debootstrap-bookworm.log" 2>&1 \
            || die "debootstrap bookworm failed, see $CACHE/images/debootstrap-bookworm.log"
        rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
        tar --numeric-owner -C "$dir" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
        rm -rf "$dir"
    fi
    local key
    key="$(stat -c '%s-%Y' "$tar")"
    if [[ "$(image_label msprobe/base:py311 msprobe.source)" == "$key" ]]; then
        log "msprobe/base:py311 up to date"
        return 0
    fi
    log "docker import $tar -> msprobe/base:py311"
    docker import --change "LABEL msprobe.source=$key" --change "ENV LANG=C.UTF-8" \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]' "$tar" msprobe/base:py311 >/dev/null \
        || die "docker import of the bookworm base failed"
}

# ---------------------------------------------------------------- msprobe/base-msadapter:py39
# Left out of the image: torch 1.12.1 (in the rootfs for op_generate's bench only, 1.6 GB), whatever a test
# session installed of this suite into the shared rootfs at that moment, and temporary files.
MSADAPTER_EXCLUDES=(./proc/* ./sys/* ./dev/* ./tmp/* ./root/.cache
    ./usr/local/lib/python3.9/dist-packages/torch ./usr/local/lib/python3.9/dist-packages/torch-*.dist-info
    ./usr/local/lib/python3.9/dist-packages/torchgen ./usr/local/lib/python3.9/dist-packages/caffe2
    ./usr/local/bin/torchrun ./usr/local/bin/convert-caffe2-to-onnx ./usr/local/bin/convert-onnx-to-caffe2
    ./usr/local/lib/python3.9/dist-packages/msprobe ./usr/local/lib/python3.9/dist-packages/msprobe_*
    ./usr/local/bin/msprobe)

build_msadapter() {
    local rootfs
    rootfs="$(bash "$HERE/msadapter/build_rootfs.sh")" || die "building the msadapter rootfs failed"
    local key pattern excludes=()
    key="$(stat -c '%Y' "$rootfs/.msprobe-complete")-$(printf '%s\n' "${MSADAPTER_EXCLUDES[@]}" | sha256sum | cut -c1-12)"
    if [[ "$(image_label msprobe/base-msadapter:py39 msprobe.source)" == "$key" ]]; then
        log "msprobe/base-msadapter:py39 up to date"
        return 0
    fi
    for pattern in "${MSADAPTER_EXCLUDES[@]}"; do excludes+=("--exclude=$pattern"); done
    log "docker import $rootfs -> msprobe/base-msadapter:py39"
    tar --numeric-owner --anchored -C "$rootfs" "${excludes[@]}" -c . \
        | docker import --change "LABEL msprobe.source=$key" --change "ENV LANG=C.UTF-8" \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'CMD ["/usr/bin/python3.9"]' - msprobe/base-msadapter:py39 >/dev/null \
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

# ---------------------------------------------------------------- msprobe/base-torch:2.13.0-cpu (shared torch layer)
build_torch() {
    local stage="$CACHE/build/torch"
    rm -rf "$stage"
    mkdir -p "$stage/third"
    grep -v '^#' "$HERE/torch/requirements.txt" > "$stage/requirements.txt"
    download_wheels "$stage/requirements.txt" "$CACHE/wheelhouse/torch"
    stage_wheels "$CACHE/wheelhouse/torch" "$stage/third"
    docker_build msprobe/base-torch:2.13.0-cpu "$HERE/torch/Dockerfile" "$stage"
}

main() {
    local wanted=("$@") item
    [[ ${#wanted[@]} -gt 0 ]] || wanted=("${ALL_IMAGES[@]}")
    for item in "${wanted[@]}"; do
        case "$item" in
            base|torch|msadapter) ;;
            *) die "unknown image '$item' (expected: ${ALL_IMAGES[*]}; tool images: msprobe image build)" ;;
        esac
    done
    bash "$REPO/.ci/dockerd.sh" start
    # clones on one machine (and test workers) share the cache and the image tags: one build at a time
    mkdir -p "$CACHE/images"
    exec 8>"$CACHE/images/.build.lock"
    if ! flock -n 8; then
        log "another build holds $CACHE/images/.build.lock; waiting for it"
        flock 8
    fi
    local start=$SECONDS
    for item in "${wanted[@]}"; do
        case "$item" in
            base) build_base ;;
            torch) build_base && build_torch ;;
            msadapter) build_msadapter ;;
        esac
    done
    log "done in $((SECONDS - start))s"
}

main "$@"
