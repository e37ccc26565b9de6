// Preload for research A/Bs (node --import): restricts the cluster sizes the split planner may choose to
// $LLCOMM_PROBE_SPLIT_CLUSTERS (a comma list of 1, 2, 4, 8), by editing fused-launcher.ts's FUSED_CLUSTER_SIZES in
// place (planFusedSplit reads it at every call), so that a bench run measures the split kernels in launch shapes the
// planner would not pick. Never in the product: one process with virtual ranks only (every rank plans alike there).
import { FUSED_CLUSTER_SIZES } from 'llcomm/internal'

const text = process.env.LLCOMM_PROBE_SPLIT_CLUSTERS
if (text) {
  const keep = text.split(',').map(Number)
  if (keep.some((c) => ![1, 2, 4, 8].includes(c))) throw new Error(`LLCOMM_PROBE_SPLIT_CLUSTERS=${text}: 1, 2, 4 or 8`)
  FUSED_CLUSTER_SIZES.splice(0, FUSED_CLUSTER_SIZES.length, ...keep)
  console.error(`fused-cluster-sizes: split clusters ${FUSED_CLUSTER_SIZES.join(',')}`)
}
