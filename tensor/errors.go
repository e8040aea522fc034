package tensor

import (
	"fmt"

	"github.com/vkllm/vkllm/errcode"
)

// CorruptError reports a malformed, truncated or lying model file: where in
// the file (byte offset, -1 if not known) and what is wrong.
type CorruptError struct {
	Format string // "safetensors", "gguf", …
	Path   string // file path, if known
	Offset int64  // byte offset of the problem, -1 if not known
	Reason string
}

func (e *CorruptError) Error() string {
	where := e.Format
	if e.Path != "" {
		where += " " + e.Path
	}
	if e.Offset >= 0 {
		return fmt.Sprintf("%s: corrupt at byte %d: %s", where, e.Offset, e.Reason)
	}
	return fmt.Sprintf("%s: corrupt: %s", where, e.Reason)
}

// Code implements errcode.Coder.
func (e *CorruptError) Code() errcode.Code { return errcode.ModelCorrupt }

// UnsupportedDTypeError reports an element type a file uses that vkllm does
// not know or cannot use for the operation asked.
type UnsupportedDTypeError struct {
	Format string // where the type came from ("safetensors", "gguf", "dequantize")
	DType  string // the type's name or numeric id as found in the file
	Tensor string // the tensor's name, if any
}

func (e *UnsupportedDTypeError) Error() string {
	s := fmt.Sprintf("%s: unsupported dtype %s", e.Format, e.DType)
	if e.Tensor != "" {
		s += fmt.Sprintf(" (tensor %q)", e.Tensor)
	}
	return s
}

// Code implements errcode.Coder.
func (e *UnsupportedDTypeError) Code() errcode.Code { return errcode.LoadFailed }
