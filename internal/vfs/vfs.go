package vfs

import (
	"io"
	"io/fs"
	"os"
)

// File is a file open for writing.
type File interface {
	io.Writer
	io.WriterAt
	// Sync makes the file's data and metadata durable (fsync).
	Sync() error
	// SyncData makes the file's data durable, and its metadata only where
	// reading the data needs it (fdatasync; fsync where the system has
	// no fdatasync).
	SyncData() error
	// Preallocate writes zeros over [off, off+n), growing the file as
	// needed. On error part of the range may hold zeros.
	Preallocate(off, n int64) error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Chmod changes the file's mode.
	Chmod(mode fs.FileMode) error
	// Close closes the file; it does not sync it.
	Close() error
	// Name is the path the file was opened with.
	Name() string
}

// FS is the set of filesystem calls the durable packages make. Paths are
// operating-system paths. Errors are the operating system's (*fs.PathError,
// *os.LinkError) or wrap them, so errors.Is(err, fs.ErrNotExist) and
// errors.Is(err, syscall.ENOSPC) work through any implementation.
type FS interface {
	// Create creates name exclusively for writing (O_CREATE|O_EXCL,
	// mode 0644): it fails if name exists.
	Create(name string) (File, error)
	// CreateTemp creates a new file in dir for writing, as os.CreateTemp
	// does (pattern's last "*" is replaced by a random string; mode 0600).
	CreateTemp(dir, pattern string) (File, error)
	// OpenWrite opens the existing file name for writing.
	OpenWrite(name string) (File, error)
	// Open opens name for reading.
	Open(name string) (fs.File, error)
	// ReadFile reads the whole file name.
	ReadFile(name string) ([]byte, error)
	// Stat describes name.
	Stat(name string) (fs.FileInfo, error)
	// ReadDir lists the directory name, sorted by file name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Rename renames oldname to newname, replacing a file there.
	Rename(oldname, newname string) error
	// Remove removes the file or empty directory name.
	Remove(name string) error
	// RemoveAll removes name and everything under it; a missing name is
	// no error.
	RemoveAll(name string) error
	// MkdirAll creates the directory name and missing parents (mode
	// 0755), without syncing their entries (see atomicfile.MkdirAll).
	MkdirAll(name string) error
	// Truncate changes the size of the file name.
	Truncate(name string, size int64) error
	// SyncDir fsyncs the directory name, making creations, renames and
	// removals in it durable.
	SyncDir(name string) error
}

// OS is the operating system's filesystem.
var OS FS = osFS{}

type osFS struct{}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) CreateTemp(dir, pattern string) (File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) OpenWrite(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Open(name string) (fs.File, error)          { return os.Open(name) }
func (osFS) ReadFile(name string) ([]byte, error)       { return os.ReadFile(name) }
func (osFS) Stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }
func (osFS) Rename(oldname, newname string) error       { return os.Rename(oldname, newname) }
func (osFS) Remove(name string) error                   { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                { return os.RemoveAll(name) }
func (osFS) MkdirAll(name string) error                 { return os.MkdirAll(name, 0o755) }
func (osFS) Truncate(name string, size int64) error     { return os.Truncate(name, size) }

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// osFile is an *os.File with the methods File adds.
type osFile struct{ *os.File }

func (f osFile) SyncData() error { return syncData(f.File) }

// zeros is what Preallocate writes from.
var zeros [64 << 10]byte

func (f osFile) Preallocate(off, n int64) error {
	for end := off + n; off < end; {
		k, err := f.WriteAt(zeros[:min(int64(len(zeros)), end-off)], off)
		off += int64(k)
		if err != nil {
			return err
		}
	}
	return nil
}
