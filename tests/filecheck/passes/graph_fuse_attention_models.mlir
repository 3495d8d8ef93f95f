// RUN: tm-opt %S/../../../examples/models/bert.onnx -p graph-outline-constants,graph-fold-empty,graph-canonicalize,graph-merge-matmuls,graph-fuse-attention | filecheck %s --check-prefix=BERT
// RUN: tm-opt %S/../../../examples/models/gpt2.onnx -p graph-outline-constants,graph-fold-empty,graph-canonicalize,graph-merge-matmuls,graph-fuse-attention | filecheck %s --check-prefix=GPT2
// RUN: tm-opt %S/../../../examples/models/vit.onnx -p graph-outline-constants,graph-fold-empty,graph-canonicalize,graph-merge-matmuls,graph-fuse-attention | filecheck %s --check-prefix=VIT
// RUN: tm-opt %S/../../../examples/models/bert.onnx -p lower-to-cuda -t cost | filecheck %s --check-prefix=BERT-COST
// RUN: tm-opt %S/../../../examples/models/gpt2.onnx -p lower-to-cuda -t cost | filecheck %s --check-prefix=GPT2-COST
// RUN: tm-opt %S/../../../examples/models/vit.onnx -p lower-to-cuda -t cost | filecheck %s --check-prefix=VIT-COST
//
// graph-fuse-attention on the example exports (torch.onnx dynamo, opset 18; 2 layers, 2
// heads of 16): each layer's attention -- its matmuls, scalar scales, mask, softmax and
// NaN guard -- is one graph.attention, and with lower-to-cuda one launch per layer, no
// softmax kernel left (graph_fuse_attention.mlir shows each pattern on small IR).

// The BERT export: q and kᵀ each scaled by 0.5, the padding mask where(mask, 0, min) shared by the
// layers (its own kernel), k taken as stored.
// BERT-COUNT-2: graph.attention %{{.*}}, %{{.*}}, %{{.*}}, %val_8 {scale = 2.500000e-01 : f64, zero_masked_rows} : (tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<1x2x16x16xf32>
// BERT-NOT:     graph.softmax
// BERT-COST-COUNT-2: {{^}}attention_{{[0-9]+}} attention
// BERT-COST-NOT:     softmax
// BERT-COST:         total: 20 launches

// The GPT-2 export: the added constant causal mask becomes `causal`.
// GPT2-COUNT-2: graph.attention %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} {scale = 2.500000e-01 : f64, causal, zero_masked_rows} : (tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
// GPT2-NOT:     graph.softmax
// GPT2-COST-COUNT-2: {{^}}attention_{{[0-9]+}} attention
// GPT2-COST-NOT:     softmax
// GPT2-COST:         total: 19 launches

// The ViT export: the added constant of zeros is dropped; 17 tokens (a partial tile).
// VIT-COUNT-2: graph.attention %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}}, %{{[a-z_0-9]+}} {scale = 2.500000e-01 : f64, zero_masked_rows} : (tensor<1x2x17x16xf32>, tensor<1x2x17x16xf32>, tensor<1x2x17x16xf32>) -> tensor<1x2x17x16xf32>
// VIT-NOT:     graph.softmax
// VIT-COST-COUNT-2: {{^}}attention_{{[0-9]+}} attention
// VIT-COST-NOT:     softmax
// VIT-COST:         total: 18 launches
