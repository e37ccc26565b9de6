#!/usr/bin/env bash
# Prepares what a run on the GPU machine (which has no Node.js) needs to carry, all git-ignored:
#   .carry/              node binary + activate script (../shared/tools/device-pack)
#   .devdist/            the compiled packages, repository tests and examples (npm run build) without source maps
#                        and declarations (the carry limit is 64 MiB), laid out as in the tree: copy it in place
#   .devnm/node_modules  production dependencies only (koffi trimmed to linux_x64, no plotting stack), with the
#                        workspace links pointing at ../../packages so that 'llcomm' resolves to this tree
# Then call the device tool with carry [".carry", ".devnm", ".devdist"] and a command that starts with
#   source .carry/activate && ln -sfn .devnm/node_modules node_modules && cp -a .devdist/. . && ...
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
for d in /.devnm/ /.devdist/; do grep -qxF "$d" .git/info/exclude 2>/dev/null || echo "$d" >> .git/info/exclude; done
../shared/tools/device-pack >/dev/null
npm run build --silent >/dev/null || true   # tsc emits even with type errors elsewhere; check separately
manifests="package.json package-lock.json packages/llcomm/package.json packages/tools/package.json"
stamp=$(cat $manifests | sha256sum | cut -c1-16)
if [ "$(cat .devnm/stamp 2>/dev/null)" != "$stamp" ]; then
  rm -rf .devnm && mkdir -p .devnm
  for f in $manifests; do mkdir -p ".devnm/$(dirname "$f")" && cp "$f" ".devnm/$f"; done
  (cd .devnm && npm ci --omit=dev --ignore-scripts --no-audit --no-fund >/dev/null)
  # The workspace packages resolve to this tree's packages/ (the links npm made point inside .devnm).
  ln -sfn ../../packages/llcomm .devnm/node_modules/llcomm
  ln -sfn ../../../packages/tools .devnm/node_modules/@llcomm/tools
  rm -rf .devnm/packages .devnm/node_modules/@types .devnm/node_modules/undici-types
  # koffi ships prebuilt binaries for every platform; the GPU machine is linux x86-64.
  find .devnm/node_modules/koffi/build/koffi -mindepth 1 -maxdepth 1 -type d ! -name linux_x64 -exec rm -rf {} +
  # Plots are drawn here from the JSON that comes back, so the plotting stack stays home (the carry limit is 64 MiB);
  # the plot module imports vega lazily, only under --plot.
  rm -rf .devnm/node_modules/vega* .devnm/node_modules/d3-* .devnm/node_modules/topojson-client
  echo "$stamp" > .devnm/stamp
fi
rm -rf .devdist && mkdir -p .devdist
for d in packages/llcomm/dist packages/tools/dist dist-test examples/dist; do
  mkdir -p ".devdist/$d" && (cd "$d" && find . -type f ! -name '*.map' ! -name '*.d.ts' ! -name '*.tsbuildinfo' -exec cp --parents {} "$root/.devdist/$d/" \;)
done
du -sh .carry .devnm .devdist | sed 's/^/carry: /'
