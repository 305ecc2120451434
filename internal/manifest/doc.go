// Package manifest is the one snapshot-directory scheme shared by package
// postings, package dense and the engine: generation numbering, the
// manifest file (written atomically, verified by crc32c), per-file size and
// crc32c records, verification of the files a manifest names, and cleanup
// of older generations and stray temporaries. Each format keeps only its
// own content: a Layout (format name, version, the kinds of its generation
// entries) and a manifest struct that embeds Header and adds its fields.
//
// # Directory layout
//
// A snapshot directory holds MANIFEST and the entries of one generation N,
// named kind-NNNNNN[.ext] (GenName; six digits at least): files such as
// docs-000003.bin, or directories such as snap-000003 with files inside.
// MANIFEST is JSON — Header's format, version, generation and files
// ({name, size, crc32c}, names relative to the directory) plus the
// format's own fields — followed by a line "crc32c:XXXXXXXX", the crc32c
// (Castagnoli) of the JSON bytes before it.
//
// # Writing a generation
//
// Layout.Begin numbers the new generation one above the manifest's and
// every kind-N entry in the directory (temporaries and leftovers of
// crashed attempts included), so it never overwrites a file a manifest or
// a crashed attempt points to. Writer.WriteFile writes each file through
// internal/atomicfile (temp file, fsync, rename) while computing its crc32c;
// Writer.Commit fsyncs the directories written to, writes MANIFEST the same
// way followed by a directory fsync — the commit point — and only then
// removes other generations' entries, *.tmp files and a legacy manifest
// (Layout.Cleanup). A crash at any point leaves the previous generation or
// the new one readable. A Writer whose write or Commit failed (a full disk)
// removes what it wrote of its generation with Writer.Abort, unless the
// manifest on disk already names it (only the last directory fsync
// failed).
//
// # Keeping the previous generation
//
// A Layout with KeepPrevious (the engine's) keeps one more generation as a
// fallback: Commit first copies the current manifest, when it verifies, to
// MANIFEST.prev (PreviousName; atomically), and Cleanup then keeps the
// generation each of the two names. A reader whose current generation
// fails verification reads the previous one with ReadPrevious and makes it
// current again with Restore, so that the next Commit keeps the
// generation that was read, not the damaged one. A damaged or missing
// current manifest leaves MANIFEST.prev as it is.
//
// # Reading
//
// Layout.Read verifies the checksum line, the format name, the version
// (1..Layout.Version; newer is ErrVersion) and that every file name stays
// inside the directory; Layout.ReadFile / ReadFiles verify size and crc32c
// of the named files; a mismatch names the file. A manifest of an older layout (Layout.LegacyName, or
// one with no checksum line) is handed to Layout.Legacy, which converts it;
// without that hook it is ErrCorrupt. Errors wrap ErrNoManifest (with
// fs.ErrNotExist), ErrCorrupt or ErrVersion, and also the owning package's
// sentinels set in the Layout.
//
// # Filesystem
//
// Every call takes the vfs.FS it works through (vfs.OS in production;
// tests inject faults with internal/vfs/errorfs).
//
// # Concurrency
//
// A Layout is read-only and safe for concurrent use. A Writer is not; two
// Writers on one directory at once are the caller's bug (each owner
// serialises its saves; the engine also locks its directory against a
// second process, see internal/dirlock).
package manifest
