package httpapi

import (
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
)

func TestErrorStatusAndCodeByKind(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{domain.BadRequest("limit must be a number"), 400, "bad_request"},
		{domain.Unauthorized("token expired"), 401, "unauthorized"},
		{domain.Forbidden("viewers cannot launch"), 403, "forbidden"},
		{domain.NotFound("profile"), 404, "not_found"},
		{domain.Conflict("profile already running"), 409, "conflict"},
		{domain.PreconditionFailed("version is 4"), 412, "precondition_failed"},
		{tooLarge(nil, maxBodyBytes), 413, "payload_too_large"},
		{&transportError{kind: kindUnsupportedMediaType, message: "send JSON"}, 415, "unsupported_media_type"},
		{domain.Invalid("name", "is required"), 422, "validation_failed"},
		{domain.RateLimited("slow down", 3*time.Second), 429, "rate_limited"},
		{errors.New("pq: relation does not exist"), 500, "internal"},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			w := httptest.NewRecorder()
			// Wrapped, as use cases return them.
			writeError(w, httptest.NewRequest(http.MethodGet, "/x", nil), fmt.Errorf("use case: %w", c.err))
			env := expectError(t, w, c.status, c.code)
			if c.status != 500 {
				var de *domain.Error
				var te *transportError
				want := ""
				if errors.As(c.err, &de) {
					want = de.Message
				} else if errors.As(c.err, &te) {
					want = te.message
				}
				if env.Error.Message != want {
					t.Fatalf("message %q, want %q", env.Error.Message, want)
				}
			}
		})
	}
}

// TestEveryKindHasAClass reads the kinds from their declarations, not from a
// list kept by hand, so a constant added to domain (or a transportKind added
// here) without a case in classOf fails this test instead of answering 500.
func TestEveryKindHasAClass(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pkg, typeName string
		// known are kinds the loader must find, so an empty or wrong result
		// cannot pass unnoticed.
		known map[string]int64
		// internal is the one kind meant to answer 500.
		internal string
		class    func(int64) errorClass
	}{
		{
			pkg: "github.com/profilesvc/profilesvc/domain", typeName: "Kind",
			known:    map[string]int64{"KindInternal": 0, "KindBadRequest": 1, "KindRateLimited": 8},
			internal: "KindInternal",
			class:    func(v int64) errorClass { return classOf(domain.Kind(v)) },
		},
		{
			pkg: "github.com/profilesvc/profilesvc/adapters/http", typeName: "transportKind",
			known: map[string]int64{"kindPayloadTooLarge": 1, "kindMethodNotAllowed": 3},
			class: func(v int64) errorClass { return classOf(transportKind(v)) },
		},
	}
	codes := map[string]string{}
	for _, c := range cases {
		kinds := declaredConstants(t, c.pkg, c.typeName)
		for name, v := range c.known {
			if got, ok := kinds[name]; !ok || got != v {
				t.Fatalf("%s.%s: loaded %d (found %v), want %d", c.pkg, name, got, ok, v)
			}
		}
		for name, v := range kinds {
			class := c.class(v)
			if name == c.internal {
				if class.status != 500 || class.code != "internal" {
					t.Errorf("%s answers %d %s, want 500 internal", name, class.status, class.code)
				}
				continue
			}
			if class.status == 500 || class.code == "internal" {
				t.Errorf("%s has no case in classOf, so it answers 500", name)
				continue
			}
			if other, dup := codes[class.code]; dup {
				t.Errorf("%s and %s both answer code %q", name, other, class.code)
			}
			codes[class.code] = name
		}
	}
}

// declaredConstants type-checks the package pkg from source and returns
// its package-level constants of the named integer type, by name. The go
// command supplies the export data of pkg's imports, as it does for the
// compiler.
func declaredConstants(t *testing.T, pkg, typeName string) map[string]int64 {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}\t{{.Dir}}\t{{join .GoFiles \"\t\"}}", pkg)
	// Everything it needs is in the module cache already: the test was
	// built from it.
	cmd.Env = append(os.Environ(), "GOPROXY=off")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list %s: %v: %s", pkg, err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", pkg, err)
	}
	exports := map[string]string{}
	var dir string
	var goFiles []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "\t")
		exports[fields[0]] = fields[1]
		if fields[0] == pkg {
			dir, goFiles = fields[2], fields[3:]
		}
	}
	if dir == "" {
		t.Fatalf("go list did not report %s", pkg)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range goFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})}
	checked, err := conf.Check(pkg, fset, files, nil)
	if err != nil {
		t.Fatalf("type-check %s: %v", pkg, err)
	}
	scope := checked.Scope()
	named, ok := scope.Lookup(typeName).(*types.TypeName)
	if !ok {
		t.Fatalf("%s declares no type %s", pkg, typeName)
	}
	consts := map[string]int64{}
	for _, name := range scope.Names() {
		c, ok := scope.Lookup(name).(*types.Const)
		if !ok || !types.Identical(c.Type(), named.Type()) {
			continue
		}
		v, exact := constant.Int64Val(c.Val())
		if !exact {
			t.Fatalf("%s.%s = %s does not fit an int64", pkg, name, c.Val())
		}
		consts[name] = v
	}
	return consts
}

func TestErrorEnvelopeDetails(t *testing.T) {
	t.Parallel()
	var v domain.Validation
	v.Add("name", "is required")
	v.Add("screen.width", "must be positive")
	w := httptest.NewRecorder()
	writeError(w, httptest.NewRequest(http.MethodPost, "/x", nil), v.Err())
	env := expectError(t, w, 422, "validation_failed")
	if len(env.Error.Details) != 2 || env.Error.Details[0].Field != "name" || env.Error.Details[1].Issue != "must be positive" {
		t.Fatalf("details: %s", w.Body.Bytes())
	}

	w = httptest.NewRecorder()
	writeError(w, httptest.NewRequest(http.MethodGet, "/x", nil), domain.NotFound("profile"))
	if strings.Contains(w.Body.String(), "details") {
		t.Fatalf("empty details must be omitted: %s", w.Body.Bytes())
	}
}

func TestUnauthorizedCarriesAChallenge(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	writeError(w, httptest.NewRequest(http.MethodGet, "/x", nil), domain.Unauthorized("no credentials"))
	if !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("WWW-Authenticate %q", w.Header().Get("WWW-Authenticate"))
	}
}

func TestRetryAfterRoundsUpToWholeSeconds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		after time.Duration
		want  string
	}{
		{0, "1"},
		{-time.Second, "1"},
		{time.Nanosecond, "1"},
		{time.Second, "1"},
		{1500 * time.Millisecond, "2"},
		{2 * time.Second, "2"},
		{time.Minute + time.Millisecond, "61"},
	} {
		w := httptest.NewRecorder()
		writeError(w, httptest.NewRequest(http.MethodPost, "/x", nil), domain.RateLimited("wait", c.after))
		expectError(t, w, 429, "rate_limited")
		if got := w.Header().Get("Retry-After"); got != c.want {
			t.Errorf("RetryAfter %v: header %q, want %q", c.after, got, c.want)
		}
	}
}

func TestInternalErrorIsLoggedNotSent(t *testing.T) {
	t.Parallel()
	const secret = "pq: password authentication failed for user admin"
	s := newTestStack(t, []Route{{Method: http.MethodGet, Path: "/boom", Public: true, Handler: func(http.ResponseWriter, *http.Request) error {
		return fmt.Errorf("load profile: %w", errors.New(secret))
	}}}, nil)
	r := httptest.NewRequest(http.MethodGet, "/boom", nil)
	r.Header.Set("X-Request-ID", "req-500")
	w := s.serve(r)
	env := expectError(t, w, 500, "internal")
	if env.Error.Message != "internal error" || strings.Contains(w.Body.String(), "pq:") {
		t.Fatalf("500 leaks internals: %s", w.Body.Bytes())
	}
	entries := s.logs.FilterMessage("request failed").AllUntimed()
	if len(entries) != 1 {
		t.Fatalf("%d 'request failed' log entries, want 1", len(entries))
	}
	fields := entries[0].ContextMap()
	if fields["request_id"] != "req-500" || !strings.Contains(fmt.Sprint(fields["error"]), secret) {
		t.Fatalf("log entry lacks request id or error: %v", fields)
	}
}

func TestInternalKindHidesItsMessage(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	writeError(w, httptest.NewRequest(http.MethodGet, "/x", nil), &domain.Error{Kind: domain.KindInternal, Message: "disk /var/lib full"})
	env := expectError(t, w, 500, "internal")
	if env.Error.Message != "internal error" {
		t.Fatalf("message %q", env.Error.Message)
	}
}

func TestWriteJSONAndList(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	writeJSON(w, http.StatusCreated, map[string]string{"id": "prf_1"})
	if w.Code != 201 || w.Body.String() != `{"success":true,"data":{"id":"prf_1"}}`+"\n" {
		t.Fatalf("writeJSON: %d %s", w.Code, w.Body.Bytes())
	}

	next := "c2"
	w = httptest.NewRecorder()
	writeList(w, []int{1, 2}, next, 2)
	if w.Body.String() != `{"success":true,"data":[1,2],"meta":{"nextCursor":"c2","limit":2}}`+"\n" {
		t.Fatalf("writeList: %s", w.Body.Bytes())
	}

	w = httptest.NewRecorder()
	var none []string
	writeList(w, none, "", 50)
	if w.Body.String() != `{"success":true,"data":[],"meta":{"nextCursor":null,"limit":50}}`+"\n" {
		t.Fatalf("writeList of nothing: %s", w.Body.Bytes())
	}

	w = httptest.NewRecorder()
	writeNoContent(w)
	if w.Code != 204 || w.Body.Len() != 0 {
		t.Fatalf("writeNoContent: %d %q", w.Code, w.Body.Bytes())
	}
}

func TestUnencodableResponseIsA500(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	writeJSON(w, http.StatusOK, map[string]float64{"x": math.NaN()})
	expectError(t, w, 500, "internal")
}
