#!/usr/bin/env bash
# Prepares what a run on the GPU machine (which has no Node.js) needs to carry, all git-ignored:
#   .carry/            node binary + activate script (../shared/tools/device-pack)
#   dist/              the compiled package and tests (npm run build)
#   .devnm/node_modules  production dependencies only, koffi trimmed to linux_x64
# Then call the device tool with carry [".carry", "dist", ".devnm"] and a command that starts with
#   source .carry/activate && ln -sfn .devnm/node_modules node_modules && ...
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
grep -qxF '/.devnm/' .git/info/exclude 2>/dev/null || echo '/.devnm/' >> .git/info/exclude
../shared/tools/device-pack >/dev/null
npm run build --silent >/dev/null || true   # tsc emits even with type errors elsewhere; check separately
stamp=$(sha256sum package.json package-lock.json 2>/dev/null | sha256sum | cut -c1-16)
if [ "$(cat .devnm/stamp 2>/dev/null)" != "$stamp" ]; then
  rm -rf .devnm && mkdir -p .devnm
  cp package.json .devnm/ && [ -f package-lock.json ] && cp package-lock.json .devnm/
  (cd .devnm && npm ci --omit=dev --ignore-scripts --no-audit --no-fund >/dev/null)
  # koffi ships prebuilt binaries for every platform; the GPU machine is linux x86-64.
  find .devnm/node_modules/koffi/build/koffi -mindepth 1 -maxdepth 1 -type d ! -name linux_x64 -exec rm -rf {} +
  # Plots are drawn here from the JSON that comes back, so the plotting stack stays home (the carry limit is 64 MiB);
  # the plot module imports vega lazily, only under --plot.
  rm -rf .devnm/node_modules/vega* .devnm/node_modules/d3-* .devnm/node_modules/topojson-client
  echo "$stamp" > .devnm/stamp
fi
du -sh .carry dist .devnm | sed 's/^/carry: /'
