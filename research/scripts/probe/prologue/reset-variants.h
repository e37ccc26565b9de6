// Included between two kernel sources in one translation unit (prologue.cu): each source defines its own
// LLCOMM_VARIANT_<algorithm> and instantiations.def defines the others as empty, so all of them are undefined again
// before the next source; the includer then re-defines, as empty, the ones already instantiated.
#undef LLCOMM_VARIANT_oneshot_ll
#undef LLCOMM_VARIANT_oneshot_sentinel
#undef LLCOMM_VARIANT_twoshot_sentinel
#undef LLCOMM_VARIANT_twoshot_atomic
#undef LLCOMM_VARIANT_oneshot_barrier
#undef LLCOMM_VARIANT_ring
