package config

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
)

// BlobKind names where browser data and other large content are kept.
type BlobKind string

// The blob stores BLOB_URL selects.
const (
	BlobFiles    BlobKind = "files"
	BlobPostgres BlobKind = "postgres"
)

// Blob is the parsed BLOB_URL: Dir is the directory of BlobFiles.
type Blob struct {
	Kind BlobKind
	Dir  string
}

// blob reads BLOB_URL: file://DIR or postgres (only on a PostgreSQL
// database). The default is postgres on PostgreSQL, else DATA_DIR/blobs.
func (l *loader) blob(name string, dataDir string, db Database) Blob {
	v := l.read(name, "postgres on PostgreSQL, else file://DATA_DIR/blobs")
	switch {
	case v == "" && db.Kind == DatabasePostgres, v == "postgres":
		if db.Kind != DatabasePostgres {
			l.fail(name, "postgres needs DATABASE_URL to be a PostgreSQL database")
		}
		return Blob{Kind: BlobPostgres}
	case v == "":
		return Blob{Kind: BlobFiles, Dir: filepath.Join(dataDir, "blobs")}
	case strings.HasPrefix(v, "file://") && len(v) > len("file://"):
		return Blob{Kind: BlobFiles, Dir: filepath.Clean(strings.TrimPrefix(v, "file://"))}
	}
	l.fail(name, fmt.Sprintf("%q is neither file://DIR nor postgres", v))
	return Blob{}
}

// sizeUnits are the suffixes a size may carry, longest first so that "MiB"
// is not read as "B".
var sizeUnits = []struct {
	suffix string
	factor int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"b", 1},
}

// size reads a positive whole number of bytes with an optional unit:
// 512MiB, 10MB, 1GiB, 100.
func (l *loader) size(name string, def int64) int64 {
	shown := strconv.FormatInt(def, 10)
	if def%(1<<20) == 0 {
		shown = strconv.FormatInt(def>>20, 10) + "MiB"
	}
	v := l.read(name, shown)
	if v == "" {
		return def
	}
	digits, factor := strings.ToLower(v), int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(digits, u.suffix) {
			digits, factor = strings.TrimSuffix(digits, u.suffix), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(digits), 10, 64)
	if err != nil || n < 1 || n > math.MaxInt64/factor {
		l.fail(name, fmt.Sprintf("%q is not a positive size such as 512MiB or 10MB", v))
		return def
	}
	return n * factor
}
