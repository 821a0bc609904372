package prober

import (
	"net/netip"
	"testing"
)

// FuzzParseAnswer: whatever the check service answers, parsing neither
// panics nor reports an exit address that is not one.
func FuzzParseAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"ip":"203.0.113.7","country":"DE","city":"Berlin","timezone":"Europe/Berlin"}`,
		`{"ip":"2001:db8::1","country":"Germany"}`,
		`{"ip":12}`, `[1,2]`, `null`, `"ip"`, `{"ip":"fe80::1%eth0"}`, `<html>`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := parseAnswer(body)
		if err != nil {
			if res.OK {
				t.Fatalf("an error and an ok result for %q", body)
			}
			return
		}
		if _, perr := netip.ParseAddr(res.ExitIP); !res.OK || perr != nil {
			t.Fatalf("parseAnswer(%q) = %+v", body, res)
		}
	})
}
