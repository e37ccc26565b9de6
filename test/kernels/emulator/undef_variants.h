// Included after each kernel source an emulator program compiles: every source expands the instantiation tables
// (instantiations.def) for its own kernels through these macros, so they are cleared before the next source.
// No include guard: it is meant to be included again and again.
#undef LLCOMM_VARIANT
#undef LLCOMM_VARIANT_oneshot_ll
#undef LLCOMM_VARIANT_oneshot_sentinel
#undef LLCOMM_VARIANT_twoshot_sentinel
#undef LLCOMM_VARIANT_twoshot_sentinel_pull
#undef LLCOMM_VARIANT_twoshot_atomic
#undef LLCOMM_VARIANT_oneshot_barrier
#undef LLCOMM_VARIANT_ring
#undef LLCOMM_FUSED_VARIANT
#undef LLCOMM_FUSED_VARIANT_fused_rmsnorm_oneshot
#undef LLCOMM_FUSED_VARIANT_fused_rmsnorm_twoshot
#undef LLCOMM_FUSED_VARIANT_fused_rmsnorm_split
#undef LLCOMM_FUSED_VARIANT_fused_rmsnorm_split_ll
#undef LLCOMM_FUSED_VARIANT_fused_rmsnorm_split_push
#undef LLCOMM_FUSED_VARIANT_fused_rmsnorm_split_ll_push
#undef LLCOMM_FUSED_VARIANT_fused_rmsnorm_split_twoshot
#undef LLCOMM_FUSED_VARIANT_rmsnorm
#undef LLCOMM_FUSED_VARIANT_allreduce_many
