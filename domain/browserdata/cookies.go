package browserdata

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/domain"
)

// SameSite is a cookie's SameSite attribute.
type SameSite string

// The SameSite values a browser knows.
const (
	SameSiteStrict SameSite = "Strict"
	SameSiteLax    SameSite = "Lax"
	SameSiteNone   SameSite = "None"
)

// Cookie is one cookie of a profile, in the shape Playwright uses.
type Cookie struct {
	Name   string
	Value  string
	Domain string
	Path   string
	// Expires is in Unix seconds; -1 is a session cookie.
	Expires  float64
	HTTPOnly bool
	Secure   bool
	SameSite SameSite
}

// Limits of a cookie jar and of one cookie, as browsers apply them.
const (
	// MaxCookies bounds the cookies of one profile.
	MaxCookies = 10000
	// maxNameValue bounds the bytes of a cookie's name and value together.
	maxNameValue = 4096
	// maxDomain bounds a domain without its leading dot.
	maxDomain = 253
	// maxPath bounds a cookie's path, as Chromium bounds its attributes.
	maxPath = 1024
	// maxExpires is 9999-12-31T23:59:59Z.
	maxExpires = 253402300799
	// maxIssues bounds the problems one error lists.
	maxIssues = 20
	// maxLine bounds one line of a cookies.txt file, line ending excluded.
	maxLine = 16 << 10
)

// nameSeparators may not appear in a cookie name (RFC 6265 token).
const nameSeparators = `()<>@,;:\"/[]?={}`

// issues collects field issues and stops listing them after maxIssues.
type issues struct {
	v    domain.Validation
	n    int
	what string
}

func (is *issues) add(field, issue string) {
	is.n++
	switch {
	case is.n <= maxIssues:
		is.v.Add(field, issue)
	case is.n == maxIssues+1:
		is.v.Add(is.what, fmt.Sprintf("there are more problems: only the first %d are listed", maxIssues))
	}
}

// CheckCookies validates every cookie and returns them normalised: the domain
// lowercased, an empty path as "/" and an empty sameSite as "Lax". The input
// is left as it is. Problems are collected into one domain validation error
// whose fields name the cookie's index, such as "cookies[3].domain", listing
// at most the first 20.
//
// The rules are those of RFC 6265 as Chromium applies them: a name is a
// token; a value has no control characters nor ";" and no whitespace at
// either end (a browser would trim it); name and value together are at most
// 4096 bytes; the domain is a host name (with a leading dot for a cookie
// that is sent to subdomains too) or an IP address; the path starts with
// "/"; "None" needs secure; the "__Secure-" and "__Host-" prefixes need what
// browsers require of them. Two cookies with the same name, domain and path
// are refused.
func CheckCookies(cs []Cookie) ([]Cookie, error) {
	if len(cs) > MaxCookies {
		return nil, domain.Invalid("cookies", fmt.Sprintf("%d cookies: at most %d are allowed", len(cs), MaxCookies))
	}
	is := &issues{what: "cookies"}
	out := make([]Cookie, 0, len(cs))
	type key struct{ name, domain, path string }
	seen := make(map[key]int, len(cs))
	for i, c := range cs {
		c.Domain = strings.ToLower(c.Domain)
		if c.Path == "" {
			c.Path = "/"
		}
		if c.SameSite == "" {
			c.SameSite = SameSiteLax
		}
		before := is.n
		checkCookie(is, fmt.Sprintf("cookies[%d]", i), c)
		if is.n == before {
			k := key{c.Name, c.Domain, c.Path}
			if j, ok := seen[k]; ok {
				is.add(fmt.Sprintf("cookies[%d]", i), fmt.Sprintf("the same name, domain and path as cookies[%d]", j))
			} else {
				seen[k] = i
			}
		}
		out = append(out, c)
	}
	if err := is.v.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// checkCookie records the problems of one cookie, already normalised.
func checkCookie(is *issues, at string, c Cookie) {
	if issue := nameIssue(c.Name); issue != "" {
		is.add(at+".name", issue)
	}
	if issue := valueIssue(c.Value); issue != "" {
		is.add(at+".value", issue)
	}
	if n := len(c.Name) + len(c.Value); n > maxNameValue {
		is.add(at+".value", fmt.Sprintf("name and value together are %d bytes: at most %d are allowed", n, maxNameValue))
	}
	if issue := domainIssue(c.Domain); issue != "" {
		is.add(at+".domain", issue)
	}
	if issue := pathIssue(c.Path); issue != "" {
		is.add(at+".path", issue)
	}
	if issue := expiresIssue(c.Expires); issue != "" {
		is.add(at+".expires", issue)
	}
	switch c.SameSite {
	case SameSiteStrict, SameSiteLax:
	case SameSiteNone:
		if !c.Secure {
			is.add(at+".sameSite", `"None" requires secure: true; browsers drop the cookie otherwise`)
		}
	default:
		is.add(at+".sameSite", fmt.Sprintf("%q is not a SameSite value: use Strict, Lax or None", string(c.SameSite)))
	}
	lower := strings.ToLower(c.Name)
	switch {
	case strings.HasPrefix(lower, "__host-"):
		if !c.Secure || strings.HasPrefix(c.Domain, ".") || c.Path != "/" {
			is.add(at+".name", `a "__Host-" cookie needs secure: true, a domain without a leading dot and path "/"`)
		}
	case strings.HasPrefix(lower, "__secure-"):
		if !c.Secure {
			is.add(at+".name", `a "__Secure-" cookie needs secure: true`)
		}
	}
}

func nameIssue(name string) string {
	if name == "" {
		return "a cookie needs a name"
	}
	if !utf8.ValidString(name) {
		return "the name is not UTF-8"
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		switch {
		case b < 0x20 || b == 0x7f:
			return fmt.Sprintf("the name contains the control character %#02x", b)
		case b == ' ':
			return "the name contains a space"
		case strings.IndexByte(nameSeparators, b) >= 0:
			return fmt.Sprintf("the name contains %q: none of %s is allowed", b, nameSeparators)
		}
	}
	return ""
}

func valueIssue(value string) string {
	if !utf8.ValidString(value) {
		return "the value is not UTF-8"
	}
	for i := 0; i < len(value); i++ {
		b := value[i]
		switch {
		case b < 0x20 || b == 0x7f:
			return fmt.Sprintf("the value contains the control character %#02x", b)
		case b == ';':
			return `the value contains ";"`
		}
	}
	if strings.HasPrefix(value, " ") || strings.HasSuffix(value, " ") {
		return "the value starts or ends with a space"
	}
	return ""
}

// domainIssue checks a lowercased domain: a host name with an optional
// leading dot, an IPv4 address, or an IPv6 address in brackets.
func domainIssue(d string) string {
	if d == "" {
		return "a cookie needs a domain"
	}
	if strings.HasPrefix(d, "[") {
		if !strings.HasSuffix(d, "]") {
			return "an IPv6 address is written in brackets, such as [::1]"
		}
		a, err := netip.ParseAddr(d[1 : len(d)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return fmt.Sprintf("%q is not an IPv6 address", d)
		}
		return ""
	}
	host := strings.TrimPrefix(d, ".")
	if len(host) > maxDomain {
		return fmt.Sprintf("the domain is %d characters long: at most %d are allowed", len(host), maxDomain)
	}
	for i := 0; i < len(host); i++ {
		b := host[i]
		if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '.') {
			return fmt.Sprintf("the domain contains %q: only ASCII letters, digits, hyphens and dots are allowed (use the punycode form of an international name)", b)
		}
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" {
			return fmt.Sprintf("%q has an empty label: dots must separate names", d)
		}
	}
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is4() {
			return fmt.Sprintf("%q ends in a number but is not an IPv4 address", d)
		}
		if host != d {
			return "an IP address cannot have a leading dot"
		}
	}
	return ""
}

func pathIssue(p string) string {
	if !strings.HasPrefix(p, "/") {
		return `the path must start with "/"`
	}
	if len(p) > maxPath {
		return fmt.Sprintf("the path is %d bytes long: at most %d are allowed", len(p), maxPath)
	}
	if !utf8.ValidString(p) {
		return "the path is not UTF-8"
	}
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch {
		case b < 0x20 || b == 0x7f:
			return fmt.Sprintf("the path contains the control character %#02x", b)
		case b == ';':
			return `the path contains ";"`
		}
	}
	return ""
}

func expiresIssue(e float64) string {
	switch {
	case e == -1:
		return ""
	case math.IsNaN(e) || math.IsInf(e, 0):
		return "expires must be a finite number of Unix seconds, or -1 for a session cookie"
	case e < 0:
		return "expires must be -1 for a session cookie or Unix seconds (0 or more)"
	case e > maxExpires:
		return "expires is after the year 9999"
	}
	return ""
}

// utf8BOM may start a cookies.txt file.
const utf8BOM = "\xef\xbb\xbf"

// httpOnlyPrefix marks a line of a cookies.txt file as an httpOnly cookie.
const httpOnlyPrefix = "#HttpOnly_"

// ParseNetscape reads a Netscape cookies.txt file: one cookie a line as
// domain, includeSubdomains (TRUE or FALSE), path, secure (TRUE or FALSE),
// expires (Unix seconds, 0 for a session cookie), name and value, separated
// by tabs. A line starting with "#HttpOnly_" is an httpOnly cookie, other
// lines starting with "#" are comments, blank lines are skipped; CRLF line
// endings and a UTF-8 byte order mark are accepted. includeSubdomains TRUE
// gives the domain a leading dot and FALSE removes it. The format has no
// SameSite, so every cookie gets "Lax".
//
// Malformed lines are refused with a domain validation error whose fields
// name them ("line 5", counting from 1), as are lines longer than 16 KiB.
// Reading more than maxBytes is an error wrapping ErrTooLarge; an error of r
// itself is returned as it is. The cookies then go through CheckCookies,
// whose errors name them by their index among the cookies of the file.
func ParseNetscape(r io.Reader, maxBytes int64) ([]Cookie, error) {
	lr := &limitedInput{r: r, max: max(maxBytes, 0), left: max(maxBytes, 0)}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 4096), maxLine+3)
	is := &issues{what: "lines"}
	var cs []Cookie
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if n == 1 {
			line = strings.TrimPrefix(line, utf8BOM)
		}
		field := "line " + strconv.Itoa(n)
		if len(line) > maxLine {
			is.add(field, fmt.Sprintf("the line is longer than %d bytes", maxLine))
			continue
		}
		c, ok, issue := parseLine(line)
		switch {
		case issue != "":
			is.add(field, issue)
		case ok:
			cs = append(cs, c)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			is.add("line "+strconv.Itoa(n+1), fmt.Sprintf("the line is longer than %d bytes", maxLine))
			return nil, is.v.Err()
		}
		return nil, err
	}
	if err := is.v.Err(); err != nil {
		return nil, err
	}
	return CheckCookies(cs)
}

// parseLine reads one line of a cookies.txt file. ok is false for a comment
// or a blank line; issue says what is wrong with a malformed one.
func parseLine(line string) (c Cookie, ok bool, issue string) {
	if strings.TrimSpace(line) == "" {
		return c, false, ""
	}
	if strings.HasPrefix(line, httpOnlyPrefix) {
		line = line[len(httpOnlyPrefix):]
		c.HTTPOnly = true
	} else if strings.HasPrefix(line, "#") {
		return c, false, ""
	}
	f := strings.Split(line, "\t")
	if len(f) == 6 {
		f = append(f, "")
	}
	if len(f) != 7 {
		return c, false, fmt.Sprintf("%d fields: want 7 separated by tabs (domain, includeSubdomains, path, secure, expires, name, value)", len(f))
	}
	sub, okSub := parseBool(f[1])
	if !okSub {
		return c, false, fmt.Sprintf("includeSubdomains is %q: want TRUE or FALSE", f[1])
	}
	secure, okSecure := parseBool(f[3])
	if !okSecure {
		return c, false, fmt.Sprintf("secure is %q: want TRUE or FALSE", f[3])
	}
	expires, err := strconv.ParseUint(f[4], 10, 63)
	if err != nil {
		return c, false, fmt.Sprintf("expires is %q: want Unix seconds, or 0 for a session cookie", f[4])
	}
	c.Domain = strings.TrimPrefix(f[0], ".")
	if sub {
		c.Domain = "." + c.Domain
	}
	c.Path = f[2]
	c.Secure = secure
	c.Expires = float64(expires)
	if expires == 0 {
		c.Expires = -1
	}
	c.Name, c.Value = f[5], f[6]
	c.SameSite = SameSiteLax
	return c, true, ""
}

func parseBool(s string) (v, ok bool) {
	switch {
	case strings.EqualFold(s, "TRUE"):
		return true, true
	case strings.EqualFold(s, "FALSE"):
		return false, true
	}
	return false, false
}

// WriteNetscape writes cookies as a Netscape cookies.txt file, which
// ParseNetscape reads back. It expects cookies that CheckCookies accepted: a
// name, value, domain or path with a tab or a line break cannot be written
// and is an error. The format has no SameSite, so it is lost, and keeps
// whole seconds: expires is rounded down, to no less than 1 so that a cookie
// with an expiry does not become a session cookie.
func WriteNetscape(w io.Writer, cs []Cookie) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("# Netscape HTTP Cookie File\n")
	for i, c := range cs {
		for _, s := range []string{c.Name, c.Value, c.Domain, c.Path} {
			if strings.ContainsAny(s, "\t\r\n") {
				return fmt.Errorf("cookies[%d] cannot be written: it contains a tab or a line break", i)
			}
		}
		if c.HTTPOnly {
			bw.WriteString(httpOnlyPrefix)
		}
		expires := int64(0)
		if c.Expires != -1 {
			expires = max(1, int64(math.Floor(c.Expires)))
		}
		fmt.Fprintf(bw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", c.Domain, netscapeBool(strings.HasPrefix(c.Domain, ".")),
			c.Path, netscapeBool(c.Secure), expires, c.Name, c.Value)
	}
	return bw.Flush()
}

func netscapeBool(b bool) string {
	if b {
		return "TRUE"
	}
	return "FALSE"
}

// limitedInput reads at most max bytes of r and fails with ErrTooLarge when
// r has more; left is what remains of max.
type limitedInput struct {
	r         io.Reader
	max, left int64
}

func (l *limitedInput) Read(p []byte) (int, error) {
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	if int64(n) > l.left {
		return 0, fmt.Errorf("%w: the cookies file is larger than %d bytes", ErrTooLarge, l.max)
	}
	l.left -= int64(n)
	return n, err
}
