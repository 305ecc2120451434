package errorfs

import (
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"syscall"

	"github.com/hybrank/hybrank/internal/vfs"
)

// Op is a kind of filesystem call that a Fault can fail.
type Op uint8

// The kinds of calls counted and failed. OpSync covers File.Sync,
// File.SyncData and FS.SyncDir; OpCreate covers Create, CreateTemp and
// OpenWrite; OpRemove Remove and RemoveAll; OpTruncate File.Truncate and
// FS.Truncate; OpWrite Write and WriteAt (not Preallocate).
const (
	OpCreate Op = iota + 1
	OpWrite
	OpSync
	OpRename
	OpRemove
	OpPreallocate
	OpReadDir
	OpTruncate
	OpMkdir
	numOps
)

// Ops lists every Op, for tests that try each kind.
var Ops = []Op{OpCreate, OpWrite, OpSync, OpRename, OpRemove, OpPreallocate, OpReadDir, OpTruncate, OpMkdir}

var opNames = [numOps]string{"", "create", "write", "sync", "rename", "remove", "preallocate", "readdir", "truncate", "mkdir"}

func (o Op) String() string {
	if o == 0 || o >= numOps {
		return fmt.Sprintf("op(%d)", uint8(o))
	}
	return opNames[o]
}

// Mode says which calls fail once a Fault's Nth call is reached.
type Mode uint8

const (
	// Once fails the Nth call only.
	Once Mode = iota
	// Every fails the Nth call and every later call of the Fault's Op
	// (on paths matching Path).
	Every
	// All fails the Nth call and every later call of every kind: a disk
	// that is gone.
	All
)

func (m Mode) String() string {
	switch m {
	case Once:
		return "once"
	case Every:
		return "every"
	case All:
		return "all"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// Fault picks calls to fail. The zero Err is syscall.ENOSPC.
type Fault struct {
	// Op is the kind of call counted.
	Op Op
	// N is which call of Op to fail, counted from when the Fault is
	// armed (1: the next one). 0 means 1.
	N int
	// Path, when not empty, restricts the Fault to calls on paths that
	// contain it (both paths, for a rename).
	Path string
	// Err is the errno returned; syscall.ENOSPC when nil.
	Err error
	// Short cuts a failed write short: the first half of the bytes reach
	// the base FS before Err is returned. Only for OpWrite.
	Short bool
	// Mode says whether later calls fail too.
	Mode Mode
}

func (f Fault) String() string {
	s := fmt.Sprintf("%s#%d %v %s", f.Op, max(f.N, 1), f.errno(), f.Mode)
	if f.Short {
		s += " short"
	}
	if f.Path != "" {
		s += " path~" + f.Path
	}
	return s
}

func (f Fault) errno() error {
	if f.Err == nil {
		return syscall.ENOSPC
	}
	return f.Err
}

// armed is a Fault with its countdown.
type armed struct {
	Fault
	left int  // matching calls until the Nth
	hit  bool // the Nth call was reached (Every and All keep failing)
}

// FS is a vfs.FS that injects faults into a base FS. It is safe for
// concurrent use.
type FS struct {
	base vfs.FS

	mu       sync.Mutex // guards the fields below
	faults   []*armed
	dead     *armed // an All fault that fired: every mutating call fails
	calls    [numOps]int
	injected [numOps]int
}

var _ vfs.FS = (*FS)(nil)

// New returns an FS over base with faults armed.
func New(base vfs.FS, faults ...Fault) *FS {
	f := &FS{base: base}
	for _, ft := range faults {
		f.Inject(ft)
	}
	return f
}

// Inject arms a fault; its N counts from now.
func (f *FS) Inject(ft Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, &armed{Fault: ft, left: max(ft.N, 1)})
}

// Reset disarms every fault (the disk has space again, or is back); the
// counts stay.
func (f *FS) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults, f.dead = nil, nil
}

// Calls returns how many calls of op were made (failed ones included).
func (f *FS) Calls(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// Injected returns how many calls of op failed by injection.
func (f *FS) Injected(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected[op]
}

// check counts a call of op on paths and returns the fault that fails it,
// or nil.
func (f *FS) check(op Op, paths ...string) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	fire := func(a *armed) *Fault {
		f.injected[op]++
		ft := a.Fault
		if ft.Op != op {
			ft.Short = false // a dead disk's other calls fail whole
		}
		return &ft
	}
	if f.dead != nil {
		return fire(f.dead)
	}
	for _, a := range f.faults {
		if a.Op != op || !matches(a.Path, paths) {
			continue
		}
		if a.hit {
			if a.Mode == Every {
				return fire(a)
			}
			continue
		}
		if a.left--; a.left > 0 {
			continue
		}
		a.hit = true
		if a.Mode == All {
			f.dead = a
		}
		return fire(a)
	}
	return nil
}

func matches(sub string, paths []string) bool {
	if sub == "" {
		return true
	}
	for _, p := range paths {
		if strings.Contains(p, sub) {
			return true
		}
	}
	return false
}

// injectedErr carries the errno and ErrInjected.
type injectedErr struct{ errno error }

func (e injectedErr) Error() string   { return e.errno.Error() + " (injected)" }
func (e injectedErr) Unwrap() []error { return []error{e.errno, ErrInjected} }

func pathErr(op, path string, ft *Fault) error {
	return &fs.PathError{Op: op, Path: path, Err: injectedErr{ft.errno()}}
}

func (f *FS) Create(name string) (vfs.File, error) {
	if ft := f.check(OpCreate, name); ft != nil {
		return nil, pathErr("open", name, ft)
	}
	h, err := f.base.Create(name)
	if err != nil {
		return nil, err
	}
	return &file{fs: f, f: h}, nil
}

func (f *FS) CreateTemp(dir, pattern string) (vfs.File, error) {
	if ft := f.check(OpCreate, dir); ft != nil {
		return nil, pathErr("createtemp", dir, ft)
	}
	h, err := f.base.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &file{fs: f, f: h}, nil
}

func (f *FS) OpenWrite(name string) (vfs.File, error) {
	if ft := f.check(OpCreate, name); ft != nil {
		return nil, pathErr("open", name, ft)
	}
	h, err := f.base.OpenWrite(name)
	if err != nil {
		return nil, err
	}
	return &file{fs: f, f: h}, nil
}

func (f *FS) Open(name string) (fs.File, error)     { return f.base.Open(name) }
func (f *FS) ReadFile(name string) ([]byte, error)  { return f.base.ReadFile(name) }
func (f *FS) Stat(name string) (fs.FileInfo, error) { return f.base.Stat(name) }

func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	if ft := f.check(OpReadDir, name); ft != nil {
		return nil, pathErr("readdir", name, ft)
	}
	return f.base.ReadDir(name)
}

func (f *FS) Rename(oldname, newname string) error {
	if ft := f.check(OpRename, oldname, newname); ft != nil {
		return pathErr("rename", oldname, ft)
	}
	return f.base.Rename(oldname, newname)
}

func (f *FS) Remove(name string) error {
	if ft := f.check(OpRemove, name); ft != nil {
		return pathErr("remove", name, ft)
	}
	return f.base.Remove(name)
}

func (f *FS) RemoveAll(name string) error {
	if ft := f.check(OpRemove, name); ft != nil {
		return pathErr("removeall", name, ft)
	}
	return f.base.RemoveAll(name)
}

func (f *FS) MkdirAll(name string) error {
	if ft := f.check(OpMkdir, name); ft != nil {
		return pathErr("mkdir", name, ft)
	}
	return f.base.MkdirAll(name)
}

func (f *FS) Truncate(name string, size int64) error {
	if ft := f.check(OpTruncate, name); ft != nil {
		return pathErr("truncate", name, ft)
	}
	return f.base.Truncate(name, size)
}

func (f *FS) SyncDir(name string) error {
	if ft := f.check(OpSync, name); ft != nil {
		return pathErr("fsync", name, ft)
	}
	return f.base.SyncDir(name)
}

// file is a vfs.File whose calls go through its FS's faults.
type file struct {
	fs *FS
	f  vfs.File
}

func (h *file) Name() string                 { return h.f.Name() }
func (h *file) Close() error                 { return h.f.Close() }
func (h *file) Chmod(mode fs.FileMode) error { return h.f.Chmod(mode) }

func (h *file) Write(p []byte) (int, error) {
	if ft := h.fs.check(OpWrite, h.f.Name()); ft != nil {
		n := 0
		if ft.Short && len(p) > 1 {
			n, _ = h.f.Write(p[:len(p)/2])
		}
		return n, pathErr("write", h.f.Name(), ft)
	}
	return h.f.Write(p)
}

func (h *file) WriteAt(p []byte, off int64) (int, error) {
	if ft := h.fs.check(OpWrite, h.f.Name()); ft != nil {
		n := 0
		if ft.Short && len(p) > 1 {
			n, _ = h.f.WriteAt(p[:len(p)/2], off)
		}
		return n, pathErr("write", h.f.Name(), ft)
	}
	return h.f.WriteAt(p, off)
}

func (h *file) Sync() error {
	if ft := h.fs.check(OpSync, h.f.Name()); ft != nil {
		return pathErr("fsync", h.f.Name(), ft)
	}
	return h.f.Sync()
}

func (h *file) SyncData() error {
	if ft := h.fs.check(OpSync, h.f.Name()); ft != nil {
		return pathErr("fdatasync", h.f.Name(), ft)
	}
	return h.f.SyncData()
}

func (h *file) Preallocate(off, n int64) error {
	if ft := h.fs.check(OpPreallocate, h.f.Name()); ft != nil {
		return pathErr("preallocate", h.f.Name(), ft)
	}
	return h.f.Preallocate(off, n)
}

func (h *file) Truncate(size int64) error {
	if ft := h.fs.check(OpTruncate, h.f.Name()); ft != nil {
		return pathErr("truncate", h.f.Name(), ft)
	}
	return h.f.Truncate(size)
}
