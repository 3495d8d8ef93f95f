// RUN: tm-opt %s -p convert-tm-to-gpu -t cuda | filecheck %s
// RUN: tm-opt %s -p convert-tm-to-gpu -t cuda | nvcc -ptx -arch=sm_80 -x cu - -o %t.ptx
// RUN: filecheck %s --input-file %t.ptx --check-prefix=PTX
//
// The tensor-core ops print as calls of the prelude's functions, in program order: word
// fragments that are not `unsigned` are cast, shared and global operands pass by address
// (a laid-out shared buffer by its storage offset: `sb` is padded to rows of 24). One
// warp: C (16x8) = A (16x16) * B, with B given as its transpose (8x16, the `.col` operand).

// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(32) mma_tile(const tm_half* __restrict__ a, const tm_half* __restrict__ b, float* __restrict__ c) {
// CHECK:         __shared__ tm_half sa[16][16] __align__(16);
// CHECK-NEXT:    __shared__ tm_half sb[192] __align__(16);
// CHECK-NEXT:    int fa[4];
// CHECK-NEXT:    unsigned int fb[2];
// CHECK-NEXT:    float acc[4];
// CHECK:         tmlir_cp_async<16>(&sa[ra][ca], &a[ra * 16 + ca]);
// CHECK:         tmlir_cp_async<8>(&sb[(rb * 24) + cb], &b[rb * 16 + cb]);
// CHECK-NEXT:    tmlir_cp_async_commit();
// CHECK:         tmlir_cp_async_wait<0>();
// CHECK-NEXT:    __syncthreads();
// CHECK:         tmlir_ldmatrix_x4((unsigned*)fa, &sa[row][col]);
// CHECK:         tmlir_ldmatrix_x2(fb, &sb[(n * 24) + k]);
// CHECK-NEXT:    tmlir_mma_m16n8k16_f16(acc, (const unsigned*)fa, fb, acc);
// CHECK:         c[g8 * 8 + t21] = d3;

// PTX-LABEL: .entry mma_tile(
// PTX:       cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16;
// PTX:       cp.async.ca.shared.global [{{.*}}], [{{.*}}], 8;
// PTX:       cp.async.commit_group;
// PTX:       cp.async.wait_group 0;
// PTX:       ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX:       ldmatrix.sync.aligned.m8n8.x2.shared.b16
// PTX:       mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32

tm.kernel @mma_tile(%a: memref<16x16xf16>, %b: memref<8x16xf16>, %c: memref<16x8xf32>) grid(1) block(32) {
  %lane = tm.thread_id
  %sa = tm.alloc shared : memref<16x16xf16>
  %sb = tm.alloc shared layout(row_major(8, 16, pad=8)) : memref<8x16xf16>
  %fa = tm.alloc register : memref<4xi32>
  %fb = tm.alloc register : memref<2xui32>
  %acc = tm.alloc register : memref<4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %ra = arith.divui %lane, %c2 : index
  %odd = arith.remui %lane, %c2 : index
  %ca = arith.muli %odd, %c8 : index
  tm.cp_async bytes(16) %sa[%ra, %ca], %a[%ra, %ca] : memref<16x16xf16>, memref<16x16xf16>
  %rb = arith.divui %lane, %c4 : index
  %q = arith.remui %lane, %c4 : index
  %cb = arith.muli %q, %c4 : index
  tm.cp_async bytes(8) %sb[%rb, %cb], %b[%rb, %cb] : memref<8x16xf16>, memref<8x16xf16>
  tm.cp_async_commit
  %zero = arith.constant 0.0 : f32
  tm.store %zero, %acc[%c0] : memref<4xf32>
  tm.store %zero, %acc[%c1] : memref<4xf32>
  tm.store %zero, %acc[%c2] : memref<4xf32>
  tm.store %zero, %acc[%c3] : memref<4xf32>
  tm.cp_async_wait pending(0)
  tm.barrier
  %row = arith.remui %lane, %c16 : index
  %half = arith.divui %lane, %c16 : index
  %col = arith.muli %half, %c8 : index
  tm.ldmatrix x4 %fa, %sa[%row, %col] : memref<4xi32>, memref<16x16xf16>
  %n = arith.remui %lane, %c8 : index
  %j8 = arith.divui %lane, %c8 : index
  %j = arith.remui %j8, %c2 : index
  %k = arith.muli %j, %c8 : index
  tm.ldmatrix x2 %fb, %sb[%n, %k] : memref<2xui32>, memref<8x16xf16>
  tm.mma m16n8k16 f16 %acc, %fa, %fb, %acc : memref<4xf32>, memref<4xi32>, memref<2xui32>, memref<4xf32>
  %g = arith.divui %lane, %c4 : index
  %t2 = arith.muli %q, %c2 : index
  %t21 = arith.addi %t2, %c1 : index
  %g8 = arith.addi %g, %c8 : index
  %d0 = tm.load %acc[%c0] : memref<4xf32>
  tm.store %d0, %c[%g, %t2] : memref<16x8xf32>
  %d1 = tm.load %acc[%c1] : memref<4xf32>
  tm.store %d1, %c[%g, %t21] : memref<16x8xf32>
  %d2 = tm.load %acc[%c2] : memref<4xf32>
  tm.store %d2, %c[%g8, %t2] : memref<16x8xf32>
  %d3 = tm.load %acc[%c3] : memref<4xf32>
  tm.store %d3, %c[%g8, %t21] : memref<16x8xf32>
}

// The other shapes and variants; fragments indexed by their leading dimensions pass as
// one row of their C array.
// CHECK-LABEL: void __launch_bounds__(32) variants(const float* __restrict__ x, const tm_bf16* __restrict__ y) {
// CHECK:         __shared__ float sx[32][8];
// CHECK-NEXT:    __shared__ tm_bf16 sy[32][8] __align__(16);
// CHECK-NEXT:    float acc[2][2][4];
// CHECK-NEXT:    float fa[4];
// CHECK-NEXT:    int ha[4];
// CHECK-NEXT:    int fb[2][2];
// CHECK-NEXT:    int w[1];
// CHECK-NEXT:    tmlir_cp_async<4>(&sx[lane][0], &x[lane * 8]);
// CHECK-NEXT:    tmlir_cp_async<16>(&sy[lane][0], &y[lane * 8]);
// CHECK-NEXT:    tmlir_cp_async_commit();
// CHECK-NEXT:    tmlir_cp_async_wait<1>();
// CHECK-NEXT:    tmlir_ldmatrix_x1((unsigned*)w, &sy[lane][0]);
// CHECK-NEXT:    tmlir_ldmatrix_x2_trans((unsigned*)fb[1], &sy[lane][0]);
// CHECK-NEXT:    tmlir_ldmatrix_x4_trans((unsigned*)ha, &sy[lane][0]);
// CHECK-NEXT:    tmlir_mma_m16n8k16_bf16(acc[1][0], (const unsigned*)ha, (const unsigned*)fb[1], acc[1][0]);
// CHECK-NEXT:    tmlir_mma_m16n8k8_tf32(acc[0][1], (const unsigned*)fa, (const unsigned*)fb[0], acc[0][0]);
// PTX-LABEL: .entry variants(
// PTX:       cp.async.ca.shared.global [{{.*}}], [{{.*}}], 4;
// PTX:       ldmatrix.sync.aligned.m8n8.x1.shared.b16
// PTX:       ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// PTX:       ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX:       mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX:       mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
tm.kernel @variants(%x: memref<32x8xf32>, %y: memref<32x8xbf16>) grid(1) block(32) {
  %lane = tm.thread_id
  %sx = tm.alloc shared : memref<32x8xf32>
  %sy = tm.alloc shared : memref<32x8xbf16>
  %acc = tm.alloc register : memref<2x2x4xf32>
  %fa = tm.alloc register : memref<4xf32>
  %ha = tm.alloc register : memref<4xi32>
  %fb = tm.alloc register : memref<2x2xi32>
  %w = tm.alloc register : memref<1xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tm.cp_async bytes(4) %sx[%lane, %c0], %x[%lane, %c0] : memref<32x8xf32>, memref<32x8xf32>
  tm.cp_async bytes(16) %sy[%lane, %c0], %y[%lane, %c0] : memref<32x8xbf16>, memref<32x8xbf16>
  tm.cp_async_commit
  tm.cp_async_wait pending(1)
  tm.ldmatrix x1 %w, %sy[%lane, %c0] : memref<1xi32>, memref<32x8xbf16>
  tm.ldmatrix x2 trans %fb[%c1], %sy[%lane, %c0] : memref<2x2xi32>, memref<32x8xbf16>
  tm.ldmatrix x4 trans %ha, %sy[%lane, %c0] : memref<4xi32>, memref<32x8xbf16>
  tm.mma m16n8k16 bf16 %acc[%c1, %c0], %ha, %fb[%c1], %acc[%c1, %c0] : memref<2x2x4xf32>, memref<4xi32>, memref<2x2xi32>, memref<2x2x4xf32>
  tm.mma m16n8k8 tf32 %acc[%c0, %c1], %fa, %fb[%c0], %acc[%c0, %c0] : memref<2x2x4xf32>, memref<4xf32>, memref<2x2xi32>, memref<2x2x4xf32>
}

// A zero-filling copy (rows 6 and 7 past the end of x): the prelude's tmlir_cp_async_zfill,
// its condition as the third argument, the clamped source row still an address inside x.
// CHECK-LABEL: void __launch_bounds__(8) zfill(const tm_half* __restrict__ x) {
// CHECK:         const bool inside = t < 6;
// CHECK-NEXT:    const int row = inside ? t : 0;
// CHECK-NEXT:    tmlir_cp_async_zfill<16>(&sz[t][0], &x[row * 8], inside);
// CHECK-NEXT:    tmlir_cp_async_commit();
// PTX-LABEL: .entry zfill(
// PTX:       cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, %r{{[0-9]+}};
tm.kernel @zfill(%x: memref<6x8xf16>) grid(1) block(8) {
  %t = tm.thread_id
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  %sz = tm.alloc shared : memref<8x8xf16>
  %inside = arith.cmpi ult, %t, %c6 : index
  %row = arith.select %inside, %t, %c0 : index
  tm.cp_async bytes(16) %sz[%t, %c0], %x[%row, %c0] zfill_unless %inside : memref<8x8xf16>, memref<6x8xf16>
  tm.cp_async_commit
  tm.cp_async_wait pending(0)
}
