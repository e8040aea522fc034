// Package gguf reads and writes GGUF files, versions 2 and 3 (the format of
// llama.cpp and ggml; little-endian only).
//
// Layout of a file (all integers little-endian):
//
//	"GGUF"  uint32 version  uint64 n_tensors  uint64 n_kv
//	n_kv ×      key (uint64 len + bytes)  uint32 value type  value
//	n_tensors × name (uint64 len + bytes)  uint32 n_dims  uint64 ne[n_dims]
//	            uint32 ggml type  uint64 offset
//	zero padding to the alignment, then the data section: each tensor's
//	bytes at DataOffset + offset.
//
// A value is a scalar, a string (uint64 length + bytes) or an array (uint32
// element type, uint64 count, elements; arrays may hold arrays). Versions 2
// and 3 are laid out alike; 3 only added big-endian files, which this
// package refuses. Version 1 (32-bit counts) is not read.
//
// Shapes. GGUF lists dimensions innermost first: ne[0] is the length of a
// row. tensor.Tensor.Shape is row-major, outermost first, so Tensors reports
// ne reversed: a weight stored with ne = [in, out] has Shape [out, in], the
// same as its safetensors twin. TensorInfos keeps ne as stored. Write takes
// row-major shapes and stores them reversed.
//
// Data. Tensor data are views of the file mapping (Open) or of the bytes
// given to Parse, never copies; metadata values are copies and stay valid
// after Close.
//
// Validation. Parse checks everything before it trusts it, and no
// allocation is sized by a count it has not bounded:
//   - magic "GGUF"; version 2 or 3, else *VersionError (ABI_MISMATCH);
//   - the tensor and metadata counts fit in the bytes left (at least 24
//     bytes per tensor info, 13 per entry); a string's length, and an
//     array's count times its element's least size (8 for a string, 12 for
//     an array), fit in the bytes left; lists are grown as elements are read,
//     so memory follows the bytes parsed, not the count claimed;
//   - value and element types are known; bools are 0 or 1; arrays nest at
//     most MaxDepth deep; keys are valid UTF-8 and unique;
//   - general.alignment, if present, is of an integer type and a power of
//     two in [1, MaxAlignment];
//   - tensor names are unique; at most MaxDims dimensions, each at least 1
//     (ggml admits 0 but then divides by it in its own element-count check,
//     so no file llama.cpp loads has one; refusing it keeps every tensor
//     non-empty and the overlap check simple); the element count is
//     overflow-checked (below 2^62); ne[0] is a whole number of the type's
//     blocks; the byte size comes from tensor.DType.Bytes;
//   - tensor offsets are multiples of the alignment, the data lie inside
//     the file, and no two tensors share a byte. Tensors may be stored in any
//     order (ggml itself requires them packed in info order; gguf-py and
//     Write store them so).
//
// File types: FileTypeName and File.FileType give llama.cpp's name of
// general.file_type ("Q4_1", "F16"), the quantisation most weights have.
//
// Errors: a malformed file gives *tensor.CorruptError with the byte offset
// of the field at fault; a tensor of a ggml type vkllm does not read (an
// unknown id, or one such as IQ2_XXS) gives *tensor.UnsupportedDTypeError
// naming the tensor and the type. Not checked: tensor name length (ggml
// limits it to 63 bytes), the key naming convention, trailing bytes after
// the last tensor.
package gguf
