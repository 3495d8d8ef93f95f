# The kernels of the ops along one axis, as CUDA C: arg max on the row-reduction template
# (tmlir/schedules/arg_reduce.py: the row's max, then the last column holding it as an i32
# max over the columns), the scan (scan.py: a thread per row, exclusive and reversed) and
# top-k (topk.py: a thread per element counting its rank).
# RUN: python %s arg_max | tm-opt -p lower-to-cuda -t cuda | filecheck %s --check-prefix=ARG
# RUN: python %s cumsum | tm-opt -p lower-to-cuda -t cuda | filecheck %s --check-prefix=SCAN
# RUN: python %s top_k | tm-opt -p lower-to-cuda -t cuda | filecheck %s --check-prefix=TOPK
import sys

from xdsl.dialects.builtin import ModuleOp, i32

from tmlir.schedules.arg_reduce import arg_reduce_kernel
from tmlir.schedules.reduce import RowProblem
from tmlir.schedules.scan import cumsum_kernel
from tmlir.schedules.topk import topk_kernel

# ARG-LABEL: // Kernel arg_max_0: schedule template 'reduce' (op=arg_max, threads_per_row=32,
# ARG-SAME:    rows=6, cols=100)
# ARG-NEXT:  {{.*}} arg_max_0(const float* __restrict__ x, long long* __restrict__ out) {
# ARG:         float acc[1];
# ARG-NEXT:    int acc_i32[1];
# The max first, NaN-propagating ...
# ARG:           acc[0] = ((v_1 < v) || (v != v)) ? v : v_1;
# ARG:         const float row_best_5 = {{.*}}
# ... then the last column holding it (or a NaN where the max is NaN), -1 elsewhere:
# ARG:         acc_i32[0] = -1;
# ARG:             const bool hit = (v_2 == row_best_5) || ((v_2 != v_2) && (row_best_5 != row_best_5));
# ARG-NEXT:        const int v_3 = hit ? c_1 : -1;
# ARG-NEXT:        const int v_4 = acc_i32[0];
# ARG-NEXT:        acc_i32[0] = (v_4 > v_3) ? v_4 : v_3;
# ARG:         const int row_index_xor16 = __shfl_xor_sync(0xffffffffu, row_index, 16);
# ARG-NEXT:    const int row_index_1 = (row_index > row_index_xor16) ? row_index : row_index_xor16;
# ARG:         if (first && row_ok) {
# ARG-NEXT:      out[r] = (long long)row_index_5;

# SCAN-LABEL: // Kernel cumsum_0: schedule template 'scan' (op=cumsum, axis=1, rows=12, cols=50,
# SCAN-SAME:     block=32, flags=exclusive,reverse), 32 threads per block
# SCAN-NEXT:  {{.*}} cumsum_0(const int* __restrict__ x, int* __restrict__ out) {
# SCAN-NEXT:    const int tid = threadIdx.x;
# SCAN-NEXT:    int acc[1];
# SCAN-NEXT:    const bool row_ok = tid < 12;
# SCAN-NEXT:    if (row_ok) {
# SCAN-NEXT:      const int row0 = tid / 3;
# SCAN-NEXT:      const int row1 = tid % 3;
# SCAN-NEXT:      acc[0] = 0;
# SCAN-NEXT:      for (int k = 0; k < 50; ++k) {
# SCAN-NEXT:        const int j = 49 - k;
# SCAN-NEXT:        const int v = x[row0 * 150 + j * 3 + row1];
# SCAN-NEXT:        const int sum = acc[0];
# SCAN-NEXT:        const int next = sum + v;
# SCAN-NEXT:        out[row0 * 150 + j * 3 + row1] = sum;
# SCAN-NEXT:        acc[0] = next;
# SCAN-NEXT:      }
# SCAN-NEXT:    }
# SCAN-NEXT:  }

# TOPK-LABEL: // Kernel top_k_0: schedule template 'topk' (axis=1, k=3, rows=8, cols=20,
# TOPK-SAME:     order=largest, block=160), 160 threads per block
# TOPK-NEXT:  {{.*}} top_k_0(const float* __restrict__ x, float* __restrict__ values, long long* __restrict__ indices) {
# TOPK:         const int row = tid / 20;
# TOPK-NEXT:    const int i = tid % 20;
# TOPK-NEXT:    const float mine = x[row * 20 + i];
# TOPK-NEXT:    rank[0] = 0;
# TOPK-NEXT:    for (int j = 0; j < 20; ++j) {
# TOPK-NEXT:      const float other = x[row * 20 + j];
# TOPK-NEXT:      const bool other_nan = other != other;
# TOPK-NEXT:      const bool mine_nan = mine != mine;
# Larger (a NaN above any number), or equal (two NaNs are) at a lower index:
# TOPK-NEXT:      const bool ahead = ((other > mine) || (other_nan && (mine == mine)))
# TOPK-SAME:        || (((other == mine) || (other_nan && mine_nan)) && (j < i));
# TOPK:         const bool selected = [[P:[a-z0-9_]+]] < 3;
# TOPK-NEXT:    if (selected) {
# TOPK-NEXT:      values[row * 3 + [[P]]] = mine;
# TOPK-NEXT:      indices[row * 3 + [[P]]] = (long long)i;

kernels = {
    "arg_max": lambda: arg_reduce_kernel("arg_max_0", RowProblem((6, 100)), last=True),
    "cumsum": lambda: cumsum_kernel("cumsum_0", (4, 50, 3), 1, exclusive=True, reverse=True,
                                    element=i32),
    "top_k": lambda: topk_kernel("top_k_0", (8, 20), 1, 3),
}
print(ModuleOp([kernels[sys.argv[1]]()]))
