package conformance_test

import (
	"testing"

	"github.com/profilesvc/profilesvc/adapters/blob/files"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
)

func TestFilesBlobStore(t *testing.T) {
	conformance.RunBlobStore(t, func(t *testing.T) ports.BlobStore {
		s, err := files.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
