package tensor

// Source is an opened weight file or set of files: a safetensors file, a
// sharded safetensors index, or a GGUF file. Tensors' Data are views that
// stay valid until Close.
type Source interface {
	// Tensors lists every tensor in file order.
	Tensors() []Tensor
	// Tensor returns the tensor with that name.
	Tensor(name string) (Tensor, bool)
	// Close releases the file mappings. Tensor data is invalid afterwards.
	Close() error
}
