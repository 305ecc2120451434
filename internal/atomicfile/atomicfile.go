package atomicfile

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/hybrank/hybrank/internal/vfs"
)

// TempSuffix ends the name of every temporary file: name.<random>.tmp, a
// new one per write, so concurrent writers of one name (two processes
// sharing a cache file) never write into each other's temporary; the last
// rename wins.
const TempSuffix = ".tmp"

// bufSize is the size of the buffer between the write callback and the file.
const bufSize = 1 << 20

// Write creates dir/name atomically: it writes to a new temporary file
// dir/name.<random>.tmp through write (buffered), flushes, fsyncs and closes the file, renames it over
// name and fsyncs dir. It returns the number of bytes written to the file.
// On any error the temp file is removed; name is untouched unless only the
// final directory fsync failed. Errors are returned unwrapped (os errors
// carry the path; write's error is returned as is).
func Write(fsys vfs.FS, dir, name string, write func(io.Writer) error) (n int64, err error) {
	n, err = write0(fsys, dir, name, write, true)
	if err != nil {
		return 0, err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return 0, err
	}
	return n, nil
}

// WriteNoSyncDir is Write without the final directory fsync, for callers
// that replace several files and fsync the directory once afterwards with
// the FS's SyncDir; until then the rename is not durable.
func WriteNoSyncDir(fsys vfs.FS, dir, name string, write func(io.Writer) error) (n int64, err error) {
	return write0(fsys, dir, name, write, true)
}

// WriteBytes is Write for content already in memory (written unbuffered, in
// one call).
func WriteBytes(fsys vfs.FS, dir, name string, data []byte) error {
	if _, err := write0(fsys, dir, name, bytesWriter(data), false); err != nil {
		return err
	}
	return fsys.SyncDir(dir)
}

// WriteBytesNoSyncDir is WriteBytes without the final directory fsync (see
// WriteNoSyncDir).
func WriteBytesNoSyncDir(fsys vfs.FS, dir, name string, data []byte) error {
	_, err := write0(fsys, dir, name, bytesWriter(data), false)
	return err
}

func bytesWriter(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// MkdirAll is os.MkdirAll(dir, 0o755) made durable: each directory it
// creates has its entry fsynced in its parent, so that files fsynced into
// a new directory (a log's first segment) are not lost with the
// directory's own entry on power failure.
func MkdirAll(fsys vfs.FS, dir string) error {
	dir = filepath.Clean(dir)
	var created []string // deepest first
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := fsys.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	for i := len(created) - 1; i >= 0; i-- {
		if err := fsys.SyncDir(filepath.Dir(created[i])); err != nil {
			return err
		}
	}
	return nil
}

// write0 does everything but the directory fsync; buffered puts a bufSize
// buffer between write and the file.
func write0(fsys vfs.FS, dir, name string, write func(io.Writer) error, buffered bool) (n int64, err error) {
	f, err := fsys.CreateTemp(dir, name+".*"+TempSuffix)
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			fsys.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o644); err != nil { // CreateTemp makes it 0600
		return 0, err
	}
	cw := &countWriter{w: f}
	if !buffered {
		err = write(cw)
	} else {
		bw := bufio.NewWriterSize(cw, bufSize)
		if err = write(bw); err == nil {
			err = bw.Flush()
		}
	}
	if err != nil {
		return 0, err
	}
	if err = f.Sync(); err != nil {
		return 0, err
	}
	closed = true
	if err = f.Close(); err != nil {
		return 0, err
	}
	if err = fsys.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return 0, err
	}
	return cw.n, nil
}

// countWriter counts the bytes that reach w.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
