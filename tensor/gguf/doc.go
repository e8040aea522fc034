// Package gguf reads and writes GGUF files (versions 2 and 3), the format
// of llama.cpp: a header (magic "GGUF", version, tensor count, metadata
// count), typed key-value metadata, tensor infos (name, dimensions, ggml
// type, offset), then the tensor data, aligned to general.alignment
// (default 32).
//
// Shapes. GGUF lists dimensions innermost first: ne[0] is the length of a
// row. tensor.Tensor.Shape is row-major, outermost first, so Tensors()
// reports ne reversed: a weight stored with ne = [in, out] has Shape
// [out, in], the same as its safetensors twin. TensorInfos keeps ne as is.
//
// Reading validates before it allocates: every count and length is bounded
// by the bytes that remain, arrays nest at most MaxDepth deep, dimensions
// number at most 4 and their product is overflow-checked, a row is a whole
// number of blocks, the alignment is a power of two, and tensor data lies
// inside the file, aligned and not overlapping. Failures are
// *tensor.CorruptError with the byte offset, *tensor.UnsupportedDTypeError,
// or *VersionError (code ABI_MISMATCH).
//
// Open maps the file read-only; tensor data are views valid until Close.
package gguf
