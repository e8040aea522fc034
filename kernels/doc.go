// Package kernels defines Backend, the small set of tensor operations the
// decoder graph is written against, and a registry of backends in the style
// of database/sql: a backend package registers itself in init with
// Register, and Open("cpu"), Open("vulkan") or Open("auto") returns one.
//
// # Tensors
//
// A Tensor is backend-owned memory with a DType and a row-major Shape,
// outermost dimension first (see package tensor). Activations are F32 of
// shape (rows, cols); token ids, positions and cell indices are I32 vectors;
// weights keep the dtype of the file (F32, F16, BF16, Q8_0, Q4_0, Q4_1,
// Q4_K, Q6_K, …) with shape (out, in). The KV cache of one layer is one
// tensor of shape (cells, kvHeads*headDim), F32 or F16.
//
// A view (Backend.View) reads the first elements of a tensor in another
// shape without copying: the models allocate their activations once for
// the largest batch and run each op on a view of the batch's rows.
//
// # Execution
//
// Ops are issued in program order and may run asynchronously (the Vulkan
// backend records them into one command buffer); the CPU backend runs each
// at once. Reading a tensor back (Get*) or Sync waits for all work issued
// before it. Ops do not return errors: shapes are the caller's contract and
// a mismatch is a programmer error that panics inside the backend. Failures
// of the device (lost device, out of memory) surface from allocation, from
// Get* and from Sync.
//
// # Optional ops
//
// A backend may also implement ops that run several of Backend's as one,
// with bitwise the same results: MultiMatMul, AddRMSNormer (a residual add
// and the norm after it), RoPEKVWriter (RoPE of q and k, the KV writes of
// k and v). The graph calls them through the functions of the same name
// (MatMuls, AddRMSNorm, RoPEKVWrite), which fall back to the plain ops on
// a backend without them, as image/draw falls back from its fast paths.
package kernels
