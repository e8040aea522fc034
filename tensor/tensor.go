package tensor

// Tensor is a named, typed, shaped view of bytes. See the package doc for
// the layout of Shape and the lifetime of Data.
type Tensor struct {
	Name  string
	DType DType
	Shape []int64 // row-major, outermost first
	Data  []byte  // exactly DType.Bytes(NumElements(Shape)) bytes
}

// NumElements is the product of the shape. Readers validate shapes, so on a
// tensor they return this cannot overflow.
func (t Tensor) NumElements() int64 {
	n, err := NumElements(t.Shape)
	if err != nil {
		return -1
	}
	return n
}
