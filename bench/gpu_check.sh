#!/usr/bin/env bash
# The dump's checks that need a GPU, in one call of the device tool on a lent machine (its python3 holds a
# CUDA torch; nothing to install):  bash bench/gpu_check.sh   (output also under $OUT, brought back)
#   bench/cuda_check.py: the dump on the GPU against the same run on the CPU, and the device
#     synchronizations a dumped step adds (L0, L1, mix);
#   bench/dump_overhead.py --device cuda: step-time ratios, the statistics' share of HBM bandwidth and the
#     synchronizations per step (the tensor mode is left out: gigabytes a step), and the flight recorder's
#     row (its ring: one non-blocking copy a step, no file unless a detector fires).
# Exit 1 when a check fails; every check runs either way.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp -d)}
export PYTHONUNBUFFERED=1
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())' | tee "$out/device.txt" || exit 1
status=0
for level in L0 L1 mix; do
    python3 bench/cuda_check.py --level "$level" 2>&1 | tee -a "$out/cuda_check.txt" || status=1
done
python3 bench/dump_overhead.py --device cuda --steps 10 \
    --modes "statistics L0,statistics L1,statistics mix,statistics L1+md5,statistics L1 async,flight_recorder" 2>&1 \
    | tee "$out/bench_cuda.txt" || status=1
exit $status
