// Package tensor holds what every weight format shares: element types
// (DType), their block layouts, dequantisation to float32 and quantisation
// from it, and Tensor, a named, typed, shaped view of bytes.
//
// Layout. Shape is row-major, outermost dimension first, exactly as
// safetensors and PyTorch write it: a linear layer's weight of HF shape
// [out, in] has Shape {out, in}, rows of `in` elements contiguous. GGUF lists
// dimensions innermost first (ne[0] is the row length); tensor/gguf reverses
// them so both formats present the same Shape.
//
// Quantised types store elements in blocks (BlockSize elements in
// BlockBytes bytes, the layouts of ggml); a row's length must be a multiple
// of the block size.
//
// Data of a Tensor returned by a reader is a view into the file mapping, not
// a copy: it stays valid until the file is closed and must not be written.
package tensor
