package cache

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// key is a 128-bit hash of what a value depends on.
type key [16]byte

// hashKey hashes parts, each preceded by its length, into a key: parts
// may hold any bytes (a separator byte would let ("q\x00a", "b") and ("q",
// "a\x00b") share a key).
func hashKey(parts ...string) key {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, p := range parts {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write([]byte(p))
	}
	var k key
	copy(k[:], h.Sum(nil))
	return k
}

// entryOverhead approximates the bytes of one entry beyond its value: the
// key twice (list element and map), the list element and the map slot.
const entryOverhead = 2*len(key{}) + 64

// Stats are a cache's counters and size.
type Stats struct {
	Hits   uint64 `json:"hits"`
	Misses uint64 `json:"misses"`
	// Shared counts the misses answered by a concurrent caller's model
	// call of the same key (counted in Misses too).
	Shared    uint64 `json:"shared"`
	Evictions uint64 `json:"evictions"`
	Entries   int    `json:"entries"`
	Bytes     int64  `json:"bytes"`
	MaxBytes  int64  `json:"max_bytes"`
}

// lru is a byte-bounded least-recently-used map from key to V. size gives
// a value's bytes (entryOverhead is added). Safe for concurrent use.
type lru[V any] struct {
	size func(V) int64

	mu    sync.Mutex
	max   int64
	ll    *list.List // front: most recently used; values are *item[V]
	items map[key]*list.Element
	st    Stats
}

type item[V any] struct {
	k key
	v V
	n int64
}

func newLRU[V any](maxBytes int64, size func(V) int64) *lru[V] {
	return &lru[V]{size: size, max: maxBytes, ll: list.New(), items: map[key]*list.Element{}, st: Stats{MaxBytes: maxBytes}}
}

// get returns the value of k and counts a hit or a miss.
func (c *lru[V]) get(k key) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.ll.MoveToFront(el)
		c.st.Hits++
		return el.Value.(*item[V]).v, true
	}
	c.st.Misses++
	var zero V
	return zero, false
}

// put stores v under k, evicting the least recently used entries until
// the cache fits its bound; a value larger than the bound is not stored.
func (c *lru[V]) put(k key, v V) {
	n := c.size(v) + int64(entryOverhead)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n > c.max {
		return
	}
	if el, ok := c.items[k]; ok {
		it := el.Value.(*item[V])
		c.st.Bytes += n - it.n
		it.v, it.n = v, n
		c.ll.MoveToFront(el)
	} else {
		c.items[k] = c.ll.PushFront(&item[V]{k: k, v: v, n: n})
		c.st.Bytes += n
	}
	for c.st.Bytes > c.max {
		el := c.ll.Back()
		it := el.Value.(*item[V])
		c.ll.Remove(el)
		delete(c.items, it.k)
		c.st.Bytes -= it.n
		c.st.Evictions++
	}
	c.st.Entries = c.ll.Len()
}

// shared counts a miss that a concurrent caller's computation answered.
func (c *lru[V]) shared() {
	c.mu.Lock()
	c.st.Shared++
	c.mu.Unlock()
}

// stats returns a copy of the counters.
func (c *lru[V]) stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st
	s.Entries = c.ll.Len()
	return s
}
