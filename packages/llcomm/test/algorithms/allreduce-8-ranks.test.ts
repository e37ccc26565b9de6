// Every algorithm x dtype x length at 8 ranks (see grid.ts for the checks and the tolerance).
import { allReduceGrid } from './grid.js'

allReduceGrid(8)
