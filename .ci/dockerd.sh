#!/usr/bin/env bash
# Start/stop/status of a dockerd owned by this project (no system service is assumed).
#   .ci/dockerd.sh start    start dockerd in background unless a daemon already answers; wait for `docker info`
#   .ci/dockerd.sh stop     kill the dockerd whose PID we recorded (never a daemon we did not start)
#   .ci/dockerd.sh status   exit 0 when `docker info` works
# Log: $MSPROBE_CACHE/dockerd.log   PID: $MSPROBE_CACHE/dockerd.pid   (MSPROBE_CACHE defaults to $HOME/.cache/msprobe)
# The daemon runs with --iptables=false --bridge=none: containers are meant to run with --network none
# (no registry is reachable anyway; base images come from debootstrap + docker import).
set -euo pipefail

CACHE="${MSPROBE_CACHE:-$HOME/.cache/msprobe}"
LOG="$CACHE/dockerd.log"
PIDFILE="$CACHE/dockerd.pid"
WAIT_S="${DOCKERD_WAIT_S:-60}"

die() { echo "[dockerd.sh] error: $*" >&2; exit 1; }
log() { echo "[dockerd.sh] $*" >&2; }

docker_ok() { docker info >/dev/null 2>&1; }

our_pid_alive() {
    [[ -f "$PIDFILE" ]] || return 1
    local pid
    pid=$(cat "$PIDFILE")
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null
}

start() {
    command -v docker >/dev/null || die "docker client not found; run: apt-get install -y docker.io"
    if docker_ok; then
        log "docker daemon already running"
        return 0
    fi
    command -v dockerd >/dev/null || die "dockerd not found; run: apt-get install -y docker.io"
    [[ $(id -u) -eq 0 ]] || die "dockerd must be started as root"
    mkdir -p "$CACHE"
    if our_pid_alive; then
        log "dockerd (pid $(cat "$PIDFILE")) alive but not answering yet; waiting"
    else
        # a stale pid file from an unclean stop would make dockerd refuse to start
        rm -f /var/run/docker.pid
        # setsid: the daemon must not die with the calling shell / pytest process group
        setsid dockerd --iptables=false --ip-masq=false --bridge=none ${DOCKERD_EXTRA_ARGS:-} \
            >>"$LOG" 2>&1 < /dev/null &
        echo $! > "$PIDFILE"
        log "started dockerd pid $(cat "$PIDFILE"), log $LOG"
    fi
    local i
    for ((i = 0; i < WAIT_S * 2; i++)); do
        if docker_ok; then
            log "docker daemon ready ($(docker info --format '{{.Driver}}' 2>/dev/null) storage driver)"
            return 0
        fi
        our_pid_alive || die "dockerd exited during start-up, see $LOG"
        sleep 0.5
    done
    die "dockerd did not answer within ${WAIT_S}s, see $LOG"
}

stop() {
    if ! our_pid_alive; then
        log "no dockerd started by us is running"
        rm -f "$PIDFILE"
        return 0
    fi
    local pid i
    pid=$(cat "$PIDFILE")
    kill "$pid"
    for ((i = 0; i < 60; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "dockerd pid $pid did not stop after 30s, sending SIGKILL"
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDFILE"
    log "stopped dockerd pid $pid"
}

status() {
    if docker_ok; then
        if our_pid_alive; then echo "running (pid $(cat "$PIDFILE"))"; else echo "running (not started by us)"; fi
        return 0
    fi
    echo "not running"
    return 1
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) die "usage: $0 start|stop|status" ;;
esac
