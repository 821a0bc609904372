package proxy_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/proxy"
)

func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindValidation {
		t.Fatalf("err = %v, want a validation error", err)
	}
	var out []string
	for _, f := range de.Fields {
		out = append(out, f.Field)
	}
	return out
}

func TestSpecCheckNamesTheField(t *testing.T) {
	good := proxy.Spec{Name: "Office", Type: "socks5", Host: "proxy.example.com", Port: 1080}
	if _, err := good.Check(); err != nil {
		t.Fatalf("good spec: %v", err)
	}
	cases := []struct {
		name  string
		spec  proxy.Spec
		field string
	}{
		{"type", proxy.Spec{Type: "ftp", Host: "h.example", Port: 1}, "type"},
		{"no type", proxy.Spec{Host: "h.example", Port: 1}, "type"},
		{"port 0", proxy.Spec{Type: "http", Host: "h.example", Port: 0}, "port"},
		{"port high", proxy.Spec{Type: "http", Host: "h.example", Port: 65536}, "port"},
		{"empty host", proxy.Spec{Type: "http", Host: "", Port: 8080}, "host"},
		{"host with path", proxy.Spec{Type: "http", Host: "a/b", Port: 8080}, "host"},
		{"host with space", proxy.Spec{Type: "http", Host: "a b", Port: 8080}, "host"},
		{"unsafe name", proxy.Spec{Name: "a\u202eb", Type: "http", Host: "h.example", Port: 8080}, "name"},
	}
	for _, c := range cases {
		_, err := c.spec.Check()
		got := fieldsOf(t, err)
		if len(got) != 1 || got[0] != c.field {
			t.Errorf("%s: fields %v, want [%s]", c.name, got, c.field)
		}
	}
}

func TestParseURL(t *testing.T) {
	s, err := proxy.ParseURL("socks5://alice:s3cr%40t@proxy.example.com:1080")
	if err != nil {
		t.Fatal(err)
	}
	want := proxy.Spec{Type: "socks5", Host: "proxy.example.com", Port: 1080, Username: "alice", Password: "s3cr@t"}
	if s != want {
		t.Fatalf("got %+v, want %+v", s, want)
	}
	s, err = proxy.ParseURL("http://[2001:db8::1]:3128")
	if err != nil || s.Host != "2001:db8::1" || s.Port != 3128 || s.Type != "http" {
		t.Fatalf("ipv6: %+v %v", s, err)
	}
	for _, bad := range []string{"", "socks5://host", "ftp://h:1", "://x", "http://h:99999", "http://h:1/path"} {
		if _, err := proxy.ParseURL(bad); !domain.IsKind(err, domain.KindValidation) {
			t.Errorf("%q: err %v, want validation", bad, err)
		} else if f := fieldsOf(t, err); len(f) == 0 || f[0] != "url" {
			t.Errorf("%q: fields %v, want url", bad, f)
		}
	}
}

// The short form is bounded as sent, whatever its parts: the longest parts,
// credentials percent-encoded, fit; a port padded with zeros does not make
// the URL longer than the bound.
func TestParseURLLength(t *testing.T) {
	enc := strings.Repeat("%40", proxy.MaxUsernameBytes)
	longest := "socks5://" + enc + ":" + enc + "@" + strings.Repeat("h", proxy.MaxHostLength) + ":65535"
	s, err := proxy.ParseURL(longest)
	if err != nil {
		t.Fatalf("the longest parts (%d bytes): %v", len(longest), err)
	}
	if len(s.Username) != proxy.MaxUsernameBytes || len(s.Password) != proxy.MaxPasswordBytes {
		t.Fatalf("credentials of %d and %d bytes", len(s.Username), len(s.Password))
	}
	padded := func(n int) string {
		const head, tail = "http://h.example:", "8080"
		return head + strings.Repeat("0", n-len(head)-len(tail)) + tail
	}
	if _, err := proxy.ParseURL(padded(proxy.MaxURLBytes)); err != nil {
		t.Fatalf("%d bytes: %v", proxy.MaxURLBytes, err)
	}
	_, err = proxy.ParseURL(padded(proxy.MaxURLBytes + 1))
	if f := fieldsOf(t, err); len(f) != 1 || f[0] != "url" {
		t.Fatalf("%d bytes: fields %v, want url", proxy.MaxURLBytes+1, f)
	}
}

func TestNewRecordAndChange(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	spec := proxy.Spec{Type: "http", Host: "h.example", Port: 8080, Username: "u"}
	p := proxy.New("prx_1", "tm_1", spec, []byte("sealed"), now)
	if p.Status != proxy.StatusUnknown || p.LastCheck != nil || !p.HasPassword() || p.Name != "h.example:8080" {
		t.Fatalf("new: %+v", p)
	}
	later := now.Add(time.Minute)
	failed := p.Record(proxy.Check{CheckedAt: later, OK: false, Error: "refused"})
	if failed.Status != proxy.StatusFailed || failed.LastCheck == nil || failed.LastCheck.Error != "refused" || !failed.UpdatedAt.Equal(later) {
		t.Fatalf("record failed: %+v", failed)
	}
	if ok := failed.Record(proxy.Check{CheckedAt: later, OK: true}); ok.Status != proxy.StatusOK {
		t.Fatalf("record ok: %+v", ok)
	}
	host := "other.example"
	moved := failed.Change(proxy.Change{Host: &host, ClearPassword: true}, later)
	if moved.Host != host || moved.HasPassword() || moved.Status != proxy.StatusUnknown || moved.LastCheck != nil {
		t.Fatalf("change of address keeps no stale check: %+v", moved)
	}
	name := "renamed"
	renamed := failed.Change(proxy.Change{Name: &name}, later)
	if renamed.Status != proxy.StatusFailed || renamed.LastCheck == nil || !renamed.HasPassword() {
		t.Fatalf("rename keeps the check and the password: %+v", renamed)
	}
}
