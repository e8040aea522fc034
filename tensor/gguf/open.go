package gguf

import (
	"fmt"
	"math"

	"github.com/vkllm/vkllm/internal/mmap"
)

// Open maps and parses a GGUF file.
func Open(path string) (*File, error) {
	data, unmap, err := mmap.Map(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	f, err := parse(data, path)
	if err != nil {
		unmap()
		return nil, err
	}
	f.unmap = unmap
	return f, nil
}

// Get returns the value of a metadata key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.byKey[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// String returns a STRING value.
func (f *File) String(key string) (string, bool) {
	v, ok := f.Get(key)
	s, isStr := v.V.(string)
	return s, ok && isStr
}

// Bool returns a BOOL value.
func (f *File) Bool(key string) (bool, bool) {
	v, ok := f.Get(key)
	b, isBool := v.V.(bool)
	return b, ok && isBool
}

// Int returns a value of any integer type (false for a uint64 above
// MaxInt64 and for non-integers).
func (f *File) Int(key string) (int64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	return asInt(v)
}

func asInt(v Value) (int64, bool) {
	switch x := v.V.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

// Float returns a FLOAT32, FLOAT64 or integer value as float64.
func (f *File) Float(key string) (float64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	switch x := v.V.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	i, ok := asInt(v)
	return float64(i), ok
}

func (f *File) array(key string) (Array, bool) {
	v, ok := f.Get(key)
	a, isArr := v.V.(Array)
	return a, ok && isArr
}

// Strings returns an array of strings.
func (f *File) Strings(key string) ([]string, bool) {
	a, ok := f.array(key)
	s, isStr := a.V.([]string)
	return s, ok && isStr
}

// Int32s returns an integer array converted to int32 (false if a value
// does not fit).
func (f *File) Int32s(key string) ([]int32, bool) {
	a, ok := f.array(key)
	if !ok {
		return nil, false
	}
	var out []int32
	put := func(n int, at func(int) int64) bool {
		out = make([]int32, n)
		for i := range out {
			x := at(i)
			if x < math.MinInt32 || x > math.MaxInt32 {
				return false
			}
			out[i] = int32(x)
		}
		return true
	}
	switch v := a.V.(type) {
	case []int32:
		return v, true
	case []uint8:
		return out, put(len(v), func(i int) int64 { return int64(v[i]) })
	case []int8:
		return out, put(len(v), func(i int) int64 { return int64(v[i]) })
	case []uint16:
		return out, put(len(v), func(i int) int64 { return int64(v[i]) })
	case []int16:
		return out, put(len(v), func(i int) int64 { return int64(v[i]) })
	case []uint32:
		return out, put(len(v), func(i int) int64 { return int64(v[i]) })
	case []int64:
		return out, put(len(v), func(i int) int64 { return v[i] })
	case []uint64:
		return out, put(len(v), func(i int) int64 {
			if v[i] > math.MaxInt32 {
				return math.MaxInt64
			}
			return int64(v[i])
		})
	}
	return nil, false
}

// Float32s returns a FLOAT32 array.
func (f *File) Float32s(key string) ([]float32, bool) {
	a, ok := f.array(key)
	v, isF := a.V.([]float32)
	return v, ok && isF
}
