# Shared steps of the round-11 device calls (session-s20-b.sh, session-s20-a.sh; research/notes/signature-cost.md).
# Source it from the repository root.

# sig11_init DEFAULT_OUT TREE...: $out (OUT or DEFAULT_OUT) made, the environment set, the ab/ trees checked.
sig11_init() {
  out=${OUT:-$1}
  shift
  mkdir -p "$out"
  export LLCOMM_CACHE_DIR=${LLCOMM_CACHE_DIR:-/tmp/llcomm-cache} NCCL_NVLS_ENABLE=0
  local t
  for t in "$@"; do test -d "ab/$t" || { echo "ab/$t missing: run research/scripts/probe/make-signature-trees.sh"; exit 2; }; done
}

# sig11_ab VARIANTS: the signature A/B (8 B / 8 KB / 64 KB, bf16 and f32, 2 and 8 virtual ranks, 3 rounds) into
# $out/signature-ab.txt, a line in $out/summary.txt (with the WRONG rows: every variant's outputs are checked).
sig11_ab() {
  local t0=$SECONDS
  AB_VARIANTS="$1" AB_SIZES=8,8K,64K AB_BUDGET_S=100 OUT="$out/sigab" \
    timeout 240 bash research/scripts/probe/signature-ab.sh > "$out/signature-ab.txt" 2>&1
  echo "signature A/B: rc $?, $((SECONDS - t0)) s, WRONG rows: $(grep -c WRONG "$out/sigab/ab-tables.log")" | tee -a "$out/summary.txt"
}

# sig11_finish: the A/B's logs packed, its table and the summary printed last.
sig11_finish() {
  tar czf "$out/sigab.tgz" -C "$out" sigab && rm -rf "$out/sigab"
  sed -n '/^call signature/,$p' "$out/signature-ab.txt"
  cat "$out/summary.txt"
}
