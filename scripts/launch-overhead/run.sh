#!/usr/bin/env bash
# Eager launch overhead, C++ vs llcomm from Node, on the GPU machine (issue 4, item 4). Run from the repository root
# after `source .carry/activate` (see docs/launch-overhead.md):
#   LLCOMM_COMMIT=<sha> bash scripts/launch-overhead/run.sh
# Builds launch_loop.cpp (g++, dlopen: no CUDA link dependency), then measure.mjs compiles the kernels with llcomm's
# NVRTC path, writes the cubins and manifests, and times both sides alternately; launch_inproc.cpp (a shared library
# measure.mjs loads with koffi) is the same C loop inside the Node process, on the very PreparedLaunch JS launches.
# JSON: $OUT/launch-overhead.json.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/llcomm-launch-overhead-out}
work=$(mktemp -d /tmp/llcomm-launch-overhead.XXXXXX)
mkdir -p "$out"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>&1 || true; } > "$out/gpu-state.txt"
g++ -O2 -std=c++17 -Wall -o "$work/launch_loop" "$here/launch_loop.cpp" -ldl
g++ -O2 -std=c++17 -Wall -shared -fPIC -o "$work/liblaunch_inproc.so" "$here/launch_inproc.cpp" -ldl
export LLCOMM_COMMAND="LLCOMM_COMMIT=${LLCOMM_COMMIT:-unknown} bash scripts/launch-overhead/run.sh"
node --expose-gc "$here/measure.mjs" --cpp "$work/launch_loop" --inproc "$work/liblaunch_inproc.so" --work "$work" --out "$out/launch-overhead.json" "$@" 2>&1 | tee "$out/measure.log"
