// RUN: tm-opt %s | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | tm-opt | filecheck %s
// RUN: tm-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
//
// Data layouts: the #tm.layout attribute and the optional `layout(...)` of tm.alloc print
// in their normalized text (spaces after commas, `pad=` only when not 0, ` ^ swizzle(...)`
// with spaces around `^`) and parse back to the same text; in the generic form the layout
// is the `layout` property of tm.alloc.

// CHECK-LABEL: func.func @layout_attribute()
// CHECK-SAME:    attributes {tm.a = #tm.layout<row_major(8, 64, pad=1) * column_major(2, 2)>, tm.b = #tm.layout<column_major(4)>, tm.c = #tm.layout<row_major(2, 2) * column_major(4, 8) ^ swizzle(2, 1, 3)>}
func.func @layout_attribute() attributes {tm.a = #tm.layout<row_major(8,64,pad = 1)*column_major(2, 2)>, tm.b = #tm.layout<column_major(4, pad=0)>, tm.c = #tm.layout<row_major(2, 2) * column_major(4, 8)^swizzle(2,1,3)>} {
  func.return
}

// CHECK-LABEL: tm.kernel @allocs_with_layouts
// CHECK-NEXT:    %a = tm.alloc shared layout(column_major(64, 8)) : memref<64x8xf32>
// CHECK-NEXT:    %b = tm.alloc shared layout(row_major(32, 32, pad=1)) : memref<32x32xf32>
// CHECK-NEXT:    %c = tm.alloc register layout(row_major(2, 2) * column_major(2, 4)) {tm.note = "x"} : memref<4x8xf32>
// CHECK-NEXT:    %d = tm.alloc shared : memref<8x8xf32>
// CHECK-NEXT:    %e = tm.alloc shared layout(row_major(2, 32, 64) ^ swizzle(3, 3, 3)) : memref<2x32x64xf16>
// CHECK-NEXT:    %f = tm.alloc shared layout(row_major(16, 32, pad=4) ^ swizzle(1, 2, 4)) : memref<16x32xf32>
// CHECK-NEXT:  }
// GENERIC-LABEL: "tm.kernel"() <{sym_name = "allocs_with_layouts"
// GENERIC:         %a = "tm.alloc"() <{scope = "shared", layout = #tm.layout<column_major(64, 8)>}> : () -> memref<64x8xf32>
// GENERIC:         %d = "tm.alloc"() <{scope = "shared"}> : () -> memref<8x8xf32>
// GENERIC:         %e = "tm.alloc"() <{scope = "shared", layout = #tm.layout<row_major(2, 32, 64) ^ swizzle(3, 3, 3)>}> : () -> memref<2x32x64xf16>
tm.kernel @allocs_with_layouts() grid(1) block(32) {
  %a = tm.alloc shared layout(column_major(64, 8)) : memref<64x8xf32>
  %b = tm.alloc shared layout(row_major(32, 32, pad=1)) : memref<32x32xf32>
  %c = tm.alloc register layout(row_major(2, 2) * column_major(2, 4)) {tm.note = "x"} : memref<4x8xf32>
  %d = tm.alloc shared : memref<8x8xf32>
  %e = tm.alloc shared layout(row_major(2, 32, 64) ^ swizzle(3, 3, 3)) : memref<2x32x64xf16>
  %f = tm.alloc shared layout(row_major(16, 32, pad=4)^ swizzle( 1,2,4 )) : memref<16x32xf32>
}
