#!/usr/bin/env bash
# Kernel trees for the bf16-against-f32 A/B (bench/NOTES.md, fourth session; untracked, delete ab/ afterwards):
#   ab/f32acc  bf16 words reduced as if they were f32 words (wrong sums; timing only): is it the unpack/pack?
#   ab/notail  the 16-bit tail loads and stores replaced by the 32-bit ones (right sums for sizes that are a
#              multiple of 4 bytes): is it the tail code's size and branches?
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
rm -rf ab && mkdir -p ab/f32acc ab/notail
cp -r kernels/. ab/f32acc/ && cp -r kernels/. ab/notail/
python3 - <<'PY'
import re
p='ab/f32acc/llcomm/dtype.cuh'
s=open(p).read()
old='''  LLC_DEVICE static void addWord(float* acc, llc_u32 w) {
    acc[0] = __fadd_rn(acc[0], toF32(static_cast<llc_u16>(w & 0xFFFFu)));
    acc[1] = __fadd_rn(acc[1], toF32(static_cast<llc_u16>(w >> 16)));
  }
  LLC_DEVICE static void setWord(float* acc, llc_u32 w) {
    acc[0] = toF32(static_cast<llc_u16>(w & 0xFFFFu));
    acc[1] = toF32(static_cast<llc_u16>(w >> 16));
  }
  LLC_DEVICE static llc_u32 packWord(const float* acc) {
    return static_cast<llc_u32>(fromF32(acc[0])) | (static_cast<llc_u32>(fromF32(acc[1])) << 16);
  }'''
new='''  LLC_DEVICE static void addWord(float* acc, llc_u32 w) { acc[0] = __fadd_rn(acc[0], __uint_as_float(w)); }
  LLC_DEVICE static void setWord(float* acc, llc_u32 w) { acc[0] = __uint_as_float(w); }
  LLC_DEVICE static llc_u32 packWord(const float* acc) { return __float_as_uint(acc[0]); }'''
assert old in s; open(p,'w').write(s.replace(old,new))
p='ab/notail/llcomm/dtype.cuh'
s=open(p).read()
s2=s.replace('if (LlcDtype<DT>::kElemBytes == 4) {','if (true) {')
assert s2.count('if (true) {')==2; open(p,'w').write(s2)
PY
