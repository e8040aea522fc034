package gguf

import "math"

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
	v, _ := f.Get(key)
	s, ok := v.V.(string)
	return s, ok
}

// Bool returns a BOOL value.
func (f *File) Bool(key string) (bool, bool) {
	v, _ := f.Get(key)
	b, ok := v.V.(bool)
	return b, ok
}

// Int returns a value of any integer type as int64 (false for a UINT64
// above MaxInt64 and for non-integers).
func (f *File) Int(key string) (int64, bool) {
	v, _ := f.Get(key)
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
	v, _ := f.Get(key)
	switch x := v.V.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case uint64:
		return float64(x), true
	}
	i, ok := asInt(v)
	return float64(i), ok
}

func (f *File) array(key string) (Array, bool) {
	v, _ := f.Get(key)
	a, ok := v.V.(Array)
	return a, ok
}

// Strings returns an array of strings. The slice is the File's: do not
// modify it.
func (f *File) Strings(key string) ([]string, bool) {
	a, _ := f.array(key)
	s, ok := a.V.([]string)
	return s, ok
}

// Int32s returns an integer array as int32: an INT32 array as is (the
// File's slice: do not modify it), other integer arrays converted; false if
// a value does not fit in int32 or the array is not of integers.
func (f *File) Int32s(key string) ([]int32, bool) {
	a, _ := f.array(key)
	switch v := a.V.(type) {
	case []int32:
		return v, true
	case []uint8:
		return convert(v, fitsInt32)
	case []int8:
		return convert(v, fitsInt32)
	case []uint16:
		return convert(v, fitsInt32)
	case []int16:
		return convert(v, fitsInt32)
	case []uint32:
		return convert(v, fitsInt32)
	case []uint64:
		return convert(v, fitsInt32)
	case []int64:
		return convert(v, fitsInt32)
	}
	return nil, false
}

// Float32s returns a numeric array as float32: a FLOAT32 array as is (the
// File's slice: do not modify it), FLOAT64 and integer arrays converted
// (rounded to the nearest float32).
func (f *File) Float32s(key string) ([]float32, bool) {
	a, _ := f.array(key)
	switch v := a.V.(type) {
	case []float32:
		return v, true
	case []float64:
		return convert(v, toFloat32)
	case []uint8:
		return convert(v, toFloat32)
	case []int8:
		return convert(v, toFloat32)
	case []uint16:
		return convert(v, toFloat32)
	case []int16:
		return convert(v, toFloat32)
	case []uint32:
		return convert(v, toFloat32)
	case []int32:
		return convert(v, toFloat32)
	case []uint64:
		return convert(v, toFloat32)
	case []int64:
		return convert(v, toFloat32)
	}
	return nil, false
}

type integer interface {
	~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32 | ~uint64 | ~int64
}

type number interface {
	integer | ~float32 | ~float64
}

// fitsInt32 converts x if it lies in int32's range (negative values are
// compared as int64, the others as uint64, so no conversion wraps).
func fitsInt32[T integer](x T) (int32, bool) {
	if x < 0 {
		if int64(x) < math.MinInt32 {
			return 0, false
		}
	} else if uint64(x) > math.MaxInt32 {
		return 0, false
	}
	return int32(x), true
}

func toFloat32[T number](x T) (float32, bool) { return float32(x), true }

func convert[T, U any](v []T, conv func(T) (U, bool)) ([]U, bool) {
	out := make([]U, len(v))
	for i, x := range v {
		y, ok := conv(x)
		if !ok {
			return nil, false
		}
		out[i] = y
	}
	return out, true
}
