package browserdata

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/profilesvc/profilesvc/domain"
)

// good is a valid cookie that each case changes in one way.
func good() Cookie {
	return Cookie{Name: "sid", Value: "abc123", Domain: "example.com", Path: "/", Expires: -1,
		HTTPOnly: true, Secure: true, SameSite: SameSiteLax}
}

// fieldsOf returns the field names of a validation error, failing the test
// for any other error.
func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindValidation {
		t.Fatalf("err = %v, want a validation error", err)
	}
	var fields []string
	for _, f := range de.Fields {
		if f.Issue == "" {
			t.Errorf("field %s has no issue", f.Field)
		}
		fields = append(fields, f.Field)
	}
	return fields
}

func TestCheckCookiesAcceptsValidCookies(t *testing.T) {
	cases := map[string]func(c *Cookie){
		"as it is":                func(*Cookie) {},
		"leading dot":             func(c *Cookie) { c.Domain = ".example.com" },
		"single label":            func(c *Cookie) { c.Domain = "localhost" },
		"hyphens and digits":      func(c *Cookie) { c.Domain = "a-1.b2.example" },
		"IPv4":                    func(c *Cookie) { c.Domain = "127.0.0.1" },
		"IPv6":                    func(c *Cookie) { c.Domain = "[::1]" },
		"253-character domain":    func(c *Cookie) { c.Domain = strings.Repeat("a.", 126) + "a" },
		"empty value":             func(c *Cookie) { c.Value = "" },
		"quoted value":            func(c *Cookie) { c.Value = `"abc"` },
		"value with space inside": func(c *Cookie) { c.Value = "a b,c=d" },
		"UTF-8 value":             func(c *Cookie) { c.Value = "héllo" },
		"4096 bytes":              func(c *Cookie) { c.Value = strings.Repeat("v", 4096-len(c.Name)) },
		"expires 0":               func(c *Cookie) { c.Expires = 0 },
		"fractional expires":      func(c *Cookie) { c.Expires = 1767225600.5 },
		"expires in 9999":         func(c *Cookie) { c.Expires = 253402300799 },
		"Strict":                  func(c *Cookie) { c.SameSite = SameSiteStrict },
		"None and secure":         func(c *Cookie) { c.SameSite = SameSiteNone },
		"Lax and not secure":      func(c *Cookie) { c.Secure = false },
		"deep path":               func(c *Cookie) { c.Path = "/a/b%20c/" },
		"__Secure-":               func(c *Cookie) { c.Name = "__Secure-id"; c.Domain = ".example.com" },
		"__Host-":                 func(c *Cookie) { c.Name = "__Host-id" },
		"name with dots and dash": func(c *Cookie) { c.Name = "_ga_X-1.2" },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			c := good()
			change(&c)
			got, err := CheckCookies([]Cookie{c})
			if err != nil {
				t.Fatalf("CheckCookies(%+v): %v", c, err)
			}
			if len(got) != 1 || got[0] != c {
				t.Fatalf("got %+v, want %+v unchanged", got, c)
			}
		})
	}
}

func TestCheckCookiesNormalises(t *testing.T) {
	in := []Cookie{{Name: "a", Value: "1", Domain: "WWW.Example.COM", Expires: -1}}
	got, err := CheckCookies(in)
	if err != nil {
		t.Fatal(err)
	}
	want := Cookie{Name: "a", Value: "1", Domain: "www.example.com", Path: "/", Expires: -1, SameSite: SameSiteLax}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if in[0].Domain != "WWW.Example.COM" || in[0].Path != "" || in[0].SameSite != "" {
		t.Fatalf("the input was changed: %+v", in[0])
	}
	empty, err := CheckCookies(nil)
	if err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("CheckCookies(nil) = %#v, %v; want an empty slice", empty, err)
	}
}

func TestCheckCookiesRefusesEachRule(t *testing.T) {
	cases := map[string]struct {
		change func(c *Cookie)
		field  string
	}{
		"empty name":         {func(c *Cookie) { c.Name = "" }, "name"},
		"space in name":      {func(c *Cookie) { c.Name = "a b" }, "name"},
		"tab in name":        {func(c *Cookie) { c.Name = "a\tb" }, "name"},
		"equals in name":     {func(c *Cookie) { c.Name = "a=b" }, "name"},
		"semicolon in name":  {func(c *Cookie) { c.Name = "a;b" }, "name"},
		"quote in name":      {func(c *Cookie) { c.Name = `a"b` }, "name"},
		"slash in name":      {func(c *Cookie) { c.Name = "a/b" }, "name"},
		"brace in name":      {func(c *Cookie) { c.Name = "a{b" }, "name"},
		"DEL in name":        {func(c *Cookie) { c.Name = "a\x7fb" }, "name"},
		"bad UTF-8 name":     {func(c *Cookie) { c.Name = "a\xffb" }, "name"},
		"newline in value":   {func(c *Cookie) { c.Value = "a\nb" }, "value"},
		"NUL in value":       {func(c *Cookie) { c.Value = "a\x00b" }, "value"},
		"semicolon in value": {func(c *Cookie) { c.Value = "a;b" }, "value"},
		"leading space":      {func(c *Cookie) { c.Value = " a" }, "value"},
		"trailing space":     {func(c *Cookie) { c.Value = "a " }, "value"},
		"bad UTF-8 value":    {func(c *Cookie) { c.Value = "\xc3" }, "value"},
		"4097 bytes": {func(c *Cookie) {
			c.Value = strings.Repeat("v", 4097-len(c.Name))
		}, "value"},
		"no domain":              {func(c *Cookie) { c.Domain = "" }, "domain"},
		"only a dot":             {func(c *Cookie) { c.Domain = "." }, "domain"},
		"two leading dots":       {func(c *Cookie) { c.Domain = "..example.com" }, "domain"},
		"empty label":            {func(c *Cookie) { c.Domain = "a..example.com" }, "domain"},
		"trailing dot":           {func(c *Cookie) { c.Domain = "example.com." }, "domain"},
		"underscore":             {func(c *Cookie) { c.Domain = "a_b.example.com" }, "domain"},
		"port":                   {func(c *Cookie) { c.Domain = "example.com:8080" }, "domain"},
		"non-ASCII":              {func(c *Cookie) { c.Domain = "bücher.example" }, "domain"},
		"254-character domain":   {func(c *Cookie) { c.Domain = strings.Repeat("a.", 126) + "ab" }, "domain"},
		"not an IPv4":            {func(c *Cookie) { c.Domain = "127.0.0.256" }, "domain"},
		"IPv4 with leading dot":  {func(c *Cookie) { c.Domain = ".127.0.0.1" }, "domain"},
		"IPv6 without brackets":  {func(c *Cookie) { c.Domain = "::1" }, "domain"},
		"IPv6 missing a bracket": {func(c *Cookie) { c.Domain = "[::1" }, "domain"},
		"IPv4 in brackets":       {func(c *Cookie) { c.Domain = "[127.0.0.1]" }, "domain"},
		"IPv6 with a zone":       {func(c *Cookie) { c.Domain = "[fe80::1%eth0]" }, "domain"},
		"relative path":          {func(c *Cookie) { c.Path = "a/b" }, "path"},
		"semicolon in path":      {func(c *Cookie) { c.Path = "/a;b" }, "path"},
		"control in path":        {func(c *Cookie) { c.Path = "/a\rb" }, "path"},
		"long path":              {func(c *Cookie) { c.Path = "/" + strings.Repeat("p", 1024) }, "path"},
		"expires -2":             {func(c *Cookie) { c.Expires = -2 }, "expires"},
		"expires -0.5":           {func(c *Cookie) { c.Expires = -0.5 }, "expires"},
		"expires NaN":            {func(c *Cookie) { c.Expires = math.NaN() }, "expires"},
		"expires +Inf":           {func(c *Cookie) { c.Expires = math.Inf(1) }, "expires"},
		"expires after 9999":     {func(c *Cookie) { c.Expires = 253402300800 }, "expires"},
		"unknown sameSite":       {func(c *Cookie) { c.SameSite = "lax" }, "sameSite"},
		"None without secure": {func(c *Cookie) {
			c.SameSite, c.Secure = SameSiteNone, false
		}, "sameSite"},
		"__Secure- not secure": {func(c *Cookie) { c.Name, c.Secure = "__Secure-id", false }, "name"},
		"__secure- not secure": {func(c *Cookie) { c.Name, c.Secure = "__secure-id", false }, "name"},
		"__Host- not secure":   {func(c *Cookie) { c.Name, c.Secure = "__Host-id", false }, "name"},
		"__HOST- not secure":   {func(c *Cookie) { c.Name, c.Secure = "__HOST-id", false }, "name"},
		"__Host- with dot":     {func(c *Cookie) { c.Name, c.Domain = "__Host-id", ".example.com" }, "name"},
		"__Host- with path":    {func(c *Cookie) { c.Name, c.Path = "__Host-id", "/a" }, "name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := good()
			tc.change(&c)
			other := good()
			other.Name = "other"
			got, err := CheckCookies([]Cookie{other, c})
			if got != nil {
				t.Fatalf("got cookies %+v with an error", got)
			}
			fields := fieldsOf(t, err)
			want := []string{"cookies[1]." + tc.field}
			if !slices.Equal(fields, want) {
				t.Fatalf("fields = %q, want %q", fields, want)
			}
		})
	}
}

func TestCheckCookiesSameSiteIssueNamesTheValues(t *testing.T) {
	c := good()
	c.SameSite = "Relaxed"
	_, err := CheckCookies([]Cookie{c})
	var de *domain.Error
	if !errors.As(err, &de) || len(de.Fields) != 1 {
		t.Fatalf("err = %v", err)
	}
	for _, v := range []string{"Strict", "Lax", "None", "Relaxed"} {
		if !strings.Contains(de.Fields[0].Issue, v) {
			t.Errorf("issue %q does not mention %s", de.Fields[0].Issue, v)
		}
	}
}

func TestCheckCookiesRefusesDuplicates(t *testing.T) {
	a := good()
	b := good()
	b.Domain = "EXAMPLE.com" // the same after lowercasing
	b.Value = "other"
	b.Path = ""
	dotted := good()
	dotted.Domain = ".example.com" // a domain cookie is another cookie
	otherPath := good()
	otherPath.Path = "/a"
	_, err := CheckCookies([]Cookie{a, dotted, otherPath, b})
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want a validation error", err)
	}
	if len(de.Fields) != 1 || de.Fields[0].Field != "cookies[3]" || !strings.Contains(de.Fields[0].Issue, "cookies[0]") {
		t.Fatalf("fields = %+v, want cookies[3] naming cookies[0]", de.Fields)
	}
}

func TestCheckCookiesCollectsAndBoundsIssues(t *testing.T) {
	bad := good()
	bad.Name = ""
	bad.Path = "x"
	got := fieldsOf(t, func() error { _, err := CheckCookies([]Cookie{good(), bad}); return err }())
	if want := []string{"cookies[1].name", "cookies[1].path"}; !slices.Equal(got, want) {
		t.Fatalf("fields = %q, want %q", got, want)
	}

	many := make([]Cookie, 30)
	for i := range many {
		many[i] = bad
	}
	got = fieldsOf(t, func() error { _, err := CheckCookies(many); return err }())
	if len(got) != 21 || got[19] != "cookies[9].path" || got[20] != "cookies" {
		t.Fatalf("fields = %q, want the first 20 issues and a note on field cookies", got)
	}
}

func TestCheckCookiesRefusesTooMany(t *testing.T) {
	cs := make([]Cookie, MaxCookies+1)
	for i := range cs {
		cs[i] = good()
	}
	got := fieldsOf(t, func() error { _, err := CheckCookies(cs); return err }())
	if !slices.Equal(got, []string{"cookies"}) {
		t.Fatalf("fields = %q, want [cookies]", got)
	}
}

// realisticFile has what exporters write: a header, comments, httpOnly
// lines, a session cookie, CRLF line endings, a byte order mark.
const realisticFile = "\xef\xbb\xbf# Netscape HTTP Cookie File\r\n" +
	"# https://curl.se/docs/http-cookies.html\r\n" +
	"# This file was generated by an exporter. Edit at your own risk.\r\n" +
	"\r\n" +
	".example.com\tTRUE\t/\tFALSE\t1798761600\t_ga\tGA1.2.3.4\r\n" +
	"#HttpOnly_www.example.com\tFALSE\t/account\tTRUE\t0\tsid\t\"q=1\"\r\n" +
	"   \r\n" +
	"#HttpOnly_.Example.org\tTRUE\t/\tTRUE\t1798761600\t__Secure-token\tt0k\r\n" +
	"localhost\tfalse\t/\tfalse\t0\tempty\t\r\n" +
	"127.0.0.1\tFALSE\t/\tFALSE\t0\tsix\n"

func TestParseNetscapeRealisticFile(t *testing.T) {
	got, err := ParseNetscape(strings.NewReader(realisticFile), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want := []Cookie{
		{Name: "_ga", Value: "GA1.2.3.4", Domain: ".example.com", Path: "/", Expires: 1798761600, SameSite: SameSiteLax},
		{Name: "sid", Value: `"q=1"`, Domain: "www.example.com", Path: "/account", Expires: -1, HTTPOnly: true, Secure: true, SameSite: SameSiteLax},
		{Name: "__Secure-token", Value: "t0k", Domain: ".example.org", Path: "/", Expires: 1798761600, HTTPOnly: true, Secure: true, SameSite: SameSiteLax},
		{Name: "empty", Value: "", Domain: "localhost", Path: "/", Expires: -1, SameSite: SameSiteLax},
		{Name: "six", Value: "", Domain: "127.0.0.1", Path: "/", Expires: -1, SameSite: SameSiteLax},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseNetscapeIncludeSubdomainsSetsTheDot(t *testing.T) {
	in := "example.com\tTRUE\t/\tFALSE\t0\ta\t1\n.example.net\tFALSE\t/\tFALSE\t0\tb\t2\n"
	got, err := ParseNetscape(strings.NewReader(in), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Domain != ".example.com" || got[1].Domain != "example.net" {
		t.Fatalf("domains of %+v, want .example.com and example.net", got)
	}
}

func TestParseNetscapeRefusesMalformedLines(t *testing.T) {
	cases := map[string]struct {
		line  string
		field string
	}{
		"too few fields":          {"example.com\tTRUE\t/\tFALSE\t0", "line 3"},
		"too many fields":         {"example.com\tTRUE\t/\tFALSE\t0\ta\tb\tc", "line 3"},
		"spaces, not tabs":        {"example.com TRUE / FALSE 0 a b", "line 3"},
		"bad includeSubdomains":   {"example.com\tyes\t/\tFALSE\t0\ta\tb", "line 3"},
		"bad secure":              {"example.com\tTRUE\t/\t1\t0\ta\tb", "line 3"},
		"negative expires":        {"example.com\tTRUE\t/\tFALSE\t-1\ta\tb", "line 3"},
		"fractional expires":      {"example.com\tTRUE\t/\tFALSE\t1.5\ta\tb", "line 3"},
		"expires overflow":        {"example.com\tTRUE\t/\tFALSE\t99999999999999999999\ta\tb", "line 3"},
		"line longer than 16 KiB": {"example.com\tTRUE\t/\tFALSE\t0\ta\t" + strings.Repeat("v", 16<<10), "line 3"},
		"far too long a line":     {strings.Repeat("v", 1<<20), "line 3"},
		"bad cookie":              {"example.com\tTRUE\trelative\tFALSE\t0\ta\tb", "cookies[1].path"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := "# Netscape HTTP Cookie File\nexample.com\tFALSE\t/\tFALSE\t0\tok\t1\n" + tc.line + "\n"
			got, err := ParseNetscape(strings.NewReader(in), 4<<20)
			if got != nil {
				t.Fatalf("got cookies %+v with an error", got)
			}
			fields := fieldsOf(t, err)
			if !slices.Equal(fields, []string{tc.field}) {
				t.Fatalf("fields = %q, want [%s]", fields, tc.field)
			}
		})
	}
}

func TestParseNetscapeLineLengthBound(t *testing.T) {
	longest := "#" + strings.Repeat("c", 16<<10-1)
	for _, ending := range []string{"\n", "\r\n", ""} {
		in := "example.com\tFALSE\t/\tFALSE\t0\ta\t1\n" + longest + ending
		if got, err := ParseNetscape(strings.NewReader(in), 1<<20); err != nil || len(got) != 1 {
			t.Fatalf("a 16 KiB comment line ending in %q: %+v, %v", ending, got, err)
		}
		got := fieldsOf(t, func() error {
			_, err := ParseNetscape(strings.NewReader(in[:len(in)-len(ending)]+"c"+ending), 1<<20)
			return err
		}())
		if !slices.Equal(got, []string{"line 2"}) {
			t.Fatalf("a line one byte longer ending in %q: fields = %q, want [line 2]", ending, got)
		}
	}
}

func TestParseNetscapeListsEveryMalformedLine(t *testing.T) {
	in := "bad\nexample.com\tFALSE\t/\tFALSE\t0\tok\t1\r\nworse\r\n"
	got := fieldsOf(t, func() error { _, err := ParseNetscape(strings.NewReader(in), 1<<20); return err }())
	if want := []string{"line 1", "line 3"}; !slices.Equal(got, want) {
		t.Fatalf("fields = %q, want %q", got, want)
	}
}

func TestParseNetscapeSizeLimit(t *testing.T) {
	in := "example.com\tFALSE\t/\tFALSE\t0\ta\t1\n"
	if _, err := ParseNetscape(strings.NewReader(in), int64(len(in))); err != nil {
		t.Fatalf("a file of exactly maxBytes: %v", err)
	}
	// One byte at a time shows that reading stops at the limit.
	src := strings.NewReader(in + in)
	_, err := ParseNetscape(iotest.OneByteReader(src), int64(len(in)))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if read := int64(2*len(in)) - int64(src.Len()); read != int64(len(in))+1 {
		t.Fatalf("read %d bytes, want %d", read, len(in)+1)
	}
	if _, err := ParseNetscape(strings.NewReader("x"), 0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("maxBytes 0: err = %v, want ErrTooLarge", err)
	}
}

func TestParseNetscapeReturnsTheReadersError(t *testing.T) {
	boom := errors.New("connection reset")
	_, err := ParseNetscape(iotest.ErrReader(boom), 1<<20)
	if !errors.Is(err, boom) || domain.IsKind(err, domain.KindValidation) {
		t.Fatalf("err = %v, want the reader's error", err)
	}
}

func TestWriteNetscape(t *testing.T) {
	cs := []Cookie{
		{Name: "a", Value: "1", Domain: ".example.com", Path: "/", Expires: 1798761600.9, Secure: true, SameSite: SameSiteStrict},
		{Name: "b", Value: "", Domain: "example.com", Path: "/x", Expires: -1, HTTPOnly: true, SameSite: SameSiteLax},
		{Name: "c", Value: "v", Domain: "example.com", Path: "/", Expires: 0, SameSite: SameSiteLax},
	}
	var buf bytes.Buffer
	if err := WriteNetscape(&buf, cs); err != nil {
		t.Fatal(err)
	}
	want := "# Netscape HTTP Cookie File\n" +
		".example.com\tTRUE\t/\tTRUE\t1798761600\ta\t1\n" +
		"#HttpOnly_example.com\tFALSE\t/x\tFALSE\t0\tb\t\n" +
		"example.com\tFALSE\t/\tFALSE\t1\tc\tv\n"
	if buf.String() != want {
		t.Fatalf("wrote\n%q\nwant\n%q", buf.String(), want)
	}
}

func TestWriteNetscapeRefusesWhatItCannotWrite(t *testing.T) {
	for _, c := range []Cookie{
		{Name: "a", Value: "x\ty", Domain: "example.com", Path: "/"},
		{Name: "a\nb", Value: "x", Domain: "example.com", Path: "/"},
		{Name: "a", Value: "x", Domain: "example.com\r", Path: "/"},
		{Name: "a", Value: "x", Domain: "example.com", Path: "/\n"},
	} {
		if err := WriteNetscape(&bytes.Buffer{}, []Cookie{good(), c}); err == nil {
			t.Errorf("WriteNetscape(%+v) succeeded", c)
		}
	}
}

func TestNetscapeRoundTrip(t *testing.T) {
	cs, err := CheckCookies([]Cookie{
		{Name: "_ga", Value: "GA1.2.3.4", Domain: ".example.com", Path: "/", Expires: 1798761600},
		{Name: "sid", Value: `"quoted value"`, Domain: "www.example.com", Path: "/a/b", Expires: -1, HTTPOnly: true, Secure: true},
		{Name: "__Host-x", Value: "", Domain: "127.0.0.1", Path: "/", Expires: 1, Secure: true},
		{Name: "v6", Value: "ü,=", Domain: "[::1]", Path: "/", Expires: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteNetscape(&buf, cs); err != nil {
		t.Fatal(err)
	}
	got, err := ParseNetscape(&buf, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, cs) {
		t.Fatalf("got  %+v\nwant %+v", got, cs)
	}
}
