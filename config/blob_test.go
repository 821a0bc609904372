package config_test

import (
	"path/filepath"
	"testing"

	"github.com/profilesvc/profilesvc/config"
)

func TestLoadBlobDefaults(t *testing.T) {
	dir := t.TempDir()
	cfg, err := load(map[string]string{"DATA_DIR": dir})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if want := (config.Blob{Kind: config.BlobFiles, Dir: filepath.Join(dir, "blobs")}); cfg.Blob != want {
		t.Errorf("Blob = %+v, want %+v", cfg.Blob, want)
	}
	if cfg.ProfileDataMax != 512*1024*1024 {
		t.Errorf("ProfileDataMax = %d, want 536870912", cfg.ProfileDataMax)
	}

	cfg, err = load(map[string]string{"DATABASE_URL": "postgres://db.localhost/x"})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.Blob != (config.Blob{Kind: config.BlobPostgres}) {
		t.Errorf("Blob with PostgreSQL = %+v, want postgres", cfg.Blob)
	}
}

func TestLoadReadsBlobURL(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want config.Blob
	}{
		{map[string]string{"BLOB_URL": "file:///srv/blobs"}, config.Blob{Kind: config.BlobFiles, Dir: "/srv/blobs"}},
		{map[string]string{"BLOB_URL": "file://relative/dir"}, config.Blob{Kind: config.BlobFiles, Dir: "relative/dir"}},
		{map[string]string{"BLOB_URL": "postgres", "DATABASE_URL": "postgresql://db.localhost/x"}, config.Blob{Kind: config.BlobPostgres}},
		{map[string]string{"BLOB_URL": "file:///srv/b", "DATABASE_URL": "postgres://db.localhost/x"}, config.Blob{Kind: config.BlobFiles, Dir: "/srv/b"}},
	} {
		cfg, err := load(c.env)
		if err != nil {
			t.Fatalf("Load %v: %v", c.env, err)
		}
		if cfg.Blob != c.want {
			t.Errorf("Load %v: Blob = %+v, want %+v", c.env, cfg.Blob, c.want)
		}
	}
}

func TestLoadRefusesBadBlobURL(t *testing.T) {
	for _, c := range []struct{ value, problem string }{
		{"s3://bucket", `"s3://bucket" is neither file://DIR nor postgres`},
		{"file://", `"file://" is neither file://DIR nor postgres`},
		{"postgres", "postgres needs DATABASE_URL to be a PostgreSQL database"},
	} {
		_, err := load(map[string]string{"BLOB_URL": c.value})
		wantRefusal(t, err, "BLOB_URL", c.problem)
	}
}

func TestLoadReadsProfileDataMax(t *testing.T) {
	for value, want := range map[string]int64{
		"512MiB":  512 << 20,
		"10MB":    10_000_000,
		"1GiB":    1 << 30,
		"2gb":     2_000_000_000,
		"64KiB":   64 << 10,
		"3kB":     3000,
		"100":     100,
		"100B":    100,
		" 7 MiB ": 7 << 20,
	} {
		cfg, err := load(map[string]string{"PROFILE_DATA_MAX": value})
		if err != nil {
			t.Fatalf("PROFILE_DATA_MAX=%q: %v", value, err)
		}
		if cfg.ProfileDataMax != want {
			t.Errorf("PROFILE_DATA_MAX=%q: %d, want %d", value, cfg.ProfileDataMax, want)
		}
	}
}

func TestLoadRefusesBadProfileDataMax(t *testing.T) {
	for _, value := range []string{"0", "-1MiB", "lots", "1.5GiB", "5TiBs", "99999999999999999999", "9000000000GiB"} {
		_, err := load(map[string]string{"PROFILE_DATA_MAX": value})
		wantRefusal(t, err, "PROFILE_DATA_MAX", "is not a positive size such as 512MiB or 10MB")
	}
}
