package grammar

import (
	"container/list"
	"sync"
)

// SchemaCache keeps compiled schemas by their text, the least recently
// used dropped past its size: a request that repeats a schema skips the
// compilation and finds the pattern masks already built. Schemas that do
// not compile are not kept. Safe for concurrent use.
type SchemaCache struct {
	mu    sync.Mutex
	size  int
	order *list.List // of *Schema, the most recent first
	byKey map[string]*list.Element
}

// NewSchemaCache returns a cache of at most size schemas (at least 1).
func NewSchemaCache(size int) *SchemaCache {
	return &SchemaCache{size: max(size, 1), order: list.New(), byKey: map[string]*list.Element{}}
}

// Compile is CompileSchema through the cache.
func (c *SchemaCache) Compile(text []byte) (*Schema, error) {
	c.mu.Lock()
	if e, ok := c.byKey[string(text)]; ok {
		c.order.MoveToFront(e)
		c.mu.Unlock()
		return e.Value.(*Schema), nil
	}
	c.mu.Unlock()
	s, err := CompileSchema(text) // outside the lock: two misses may both compile
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[s.text]; ok {
		return e.Value.(*Schema), nil
	}
	c.byKey[s.text] = c.order.PushFront(s)
	for c.order.Len() > c.size {
		old := c.order.Remove(c.order.Back()).(*Schema)
		delete(c.byKey, old.text)
	}
	return s, nil
}

// Len is the number of schemas kept.
func (c *SchemaCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
