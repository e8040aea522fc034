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
	byKey map[cacheKey]*list.Element
}

type cacheKey struct {
	text   string
	strict bool
}

// NewSchemaCache returns a cache of at most size schemas (at least 1).
func NewSchemaCache(size int) *SchemaCache {
	return &SchemaCache{size: max(size, 1), order: list.New(), byKey: map[cacheKey]*list.Element{}}
}

// Compile is CompileSchema through the cache.
func (c *SchemaCache) Compile(text []byte) (*Schema, error) { return c.compile(text, false) }

// CompileStrict is CompileStrictSchema through the cache.
func (c *SchemaCache) CompileStrict(text []byte) (*Schema, error) { return c.compile(text, true) }

func (c *SchemaCache) compile(text []byte, strict bool) (*Schema, error) {
	c.mu.Lock()
	if e, ok := c.byKey[cacheKey{string(text), strict}]; ok {
		c.order.MoveToFront(e)
		c.mu.Unlock()
		return e.Value.(*Schema), nil
	}
	c.mu.Unlock()
	s, err := compileSchema(text, strict) // outside the lock: two misses may both compile
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cacheKey{s.text, strict}
	if e, ok := c.byKey[k]; ok {
		return e.Value.(*Schema), nil
	}
	c.byKey[k] = c.order.PushFront(s)
	for c.order.Len() > c.size {
		old := c.order.Remove(c.order.Back()).(*Schema)
		delete(c.byKey, cacheKey{old.text, old.strict})
	}
	return s, nil
}

// Len is the number of schemas kept.
func (c *SchemaCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
