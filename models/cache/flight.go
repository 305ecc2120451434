package cache

import (
	"context"
	"sync"

	"github.com/hybrank/hybrank/models"
)

// flights are the keys being computed now, so that a concurrent miss of
// the same key waits for that computation instead of repeating it
// (concurrent searches of one popular query, a client's retry while its
// first request still runs).
type flights[V any] struct {
	mu sync.Mutex
	m  map[key]*flight[V]
}

// flight is one key's computation: done closes when it ends; v is valid
// when ok.
type flight[V any] struct {
	done chan struct{}
	v    V
	ok   bool
}

// join returns the flight of k and whether the caller leads it: a leader
// must end it (land); the others wait on done.
func (f *flights[V]) join(k key) (*flight[V], bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[k]; ok {
		return fl, false
	}
	if f.m == nil {
		f.m = map[key]*flight[V]{}
	}
	fl := &flight[V]{done: make(chan struct{})}
	f.m[k] = fl
	return fl, true
}

// land ends k's flight: with v when ok, else as failed (its waiters then
// compute it themselves).
func (f *flights[V]) land(k key, fl *flight[V], v V, ok bool) {
	f.mu.Lock()
	delete(f.m, k)
	f.mu.Unlock()
	fl.v, fl.ok = v, ok
	close(fl.done)
}

// resolve fills out[i] for every key: from the cache c, from a concurrent
// caller's computation of the same key, or from compute, called once with
// the indices of the keys nobody else is computing (and once more for the
// keys whose other computation failed). Values the cache stores pass
// through keep (a copy the cache owns), values handed out through share
// (a copy the caller owns, for stored or shared values). Usage is
// compute's work alone.
func resolve[V any](ctx context.Context, c *lru[V], f *flights[V], keys []key, out []V,
	keep, share func(V) V, compute func(idx []int) ([]V, models.Usage, error)) (models.Usage, error) {
	var mine, waits []int
	led := map[int]*flight[V]{}
	waiting := map[int]*flight[V]{}
	for i, k := range keys {
		if v, ok := c.get(k); ok {
			out[i] = share(v)
			continue
		}
		fl, lead := f.join(k)
		if lead {
			mine, led[i] = append(mine, i), fl
		} else {
			waits, waiting[i] = append(waits, i), fl
		}
	}
	// Every flight this call leads lands, whatever happens (a failure or a
	// panic in compute): a waiter must never wait for nothing.
	landed := false
	defer func() {
		if !landed {
			var zero V
			for _, i := range mine {
				f.land(keys[i], led[i], zero, false)
			}
		}
	}()
	var usage models.Usage
	if len(mine) > 0 {
		v, u, err := compute(mine)
		usage = u
		if err != nil {
			return usage, err
		}
		for j, i := range mine {
			kept := keep(v[j])
			c.put(keys[i], kept)
			f.land(keys[i], led[i], kept, true)
			out[i] = v[j]
		}
	}
	landed = true
	var retry []int
	for _, i := range waits {
		fl := waiting[i]
		select {
		case <-fl.done:
		case <-ctx.Done():
			return usage, ctx.Err()
		}
		if fl.ok {
			out[i] = share(fl.v)
			c.shared()
		} else {
			retry = append(retry, i)
		}
	}
	if len(retry) > 0 {
		v, u, err := compute(retry)
		usage.Add(u)
		if err != nil {
			return usage, err
		}
		for j, i := range retry {
			c.put(keys[i], keep(v[j]))
			out[i] = v[j]
		}
	}
	return usage, nil
}
