package generators_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/tests/generators/goclient"
)

// The committed Go client is what oapi-codegen, at the version and with the
// flags of goclient/generate.go's go:generate line, makes of the document
// that the service serves.
func TestGoClientIsGeneratedFromTheServedDocument(t *testing.T) {
	t.Parallel()
	generate := goGenerateLine(t)
	base := startService(t)
	out := filepath.Join(t.TempDir(), "client.gen.go")
	args := append([]string{"run"}, generate.generator...)
	args = append(args, "-o", out, base+"/openapi.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), flowTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = t.TempDir() // outside the module: go run pkg@version leaves go.mod alone
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, output)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join("goclient", "client.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Fatalf("goclient/client.gen.go is not what %s makes of the served document; "+
			"regenerate it with: go generate ./tests/generators/goclient", generate.generator[0])
	}
}

// generateLine is goclient/generate.go's go:generate command, split into
// the generator with its flags and the document it reads.
type generateLine struct {
	generator []string // package@version and flags, without -o and the document
	document  string
}

// goGenerateLine reads the go:generate line of goclient/generate.go: the
// test runs the same generator with the same flags.
func goGenerateLine(t *testing.T) generateLine {
	t.Helper()
	f, err := os.Open(filepath.Join("goclient", "generate.go"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "//go:generate go run ")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		var line generateLine
		for i := 0; i < len(fields); i++ {
			switch {
			case fields[i] == "-o" && i+1 < len(fields):
				i++
			case i == len(fields)-1:
				line.document = fields[i]
			default:
				line.generator = append(line.generator, fields[i])
			}
		}
		if line.document != "../../../adapters/http/openapi.yaml" || len(line.generator) == 0 {
			t.Fatalf("goclient/generate.go: the go:generate line %q does not generate from adapters/http/openapi.yaml", s.Text())
		}
		return line
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatal("goclient/generate.go has no go:generate line")
	return generateLine{}
}

// The oapi-codegen client drives the flow: register, create an API key,
// and with that key create a profile, launch it and release it.
func TestGoClientFlow(t *testing.T) {
	t.Parallel()
	base := startService(t)
	ctx, cancel := context.WithTimeout(context.Background(), flowTimeout)
	defer cancel()
	c, err := goclient.NewClientWithResponses(base)
	if err != nil {
		t.Fatal(err)
	}

	reg, err := c.RegisterWithResponse(ctx, goclient.RegisterJSONRequestBody{
		Email: "go-client@example.com", Password: "generated go client", Name: "Go client",
	})
	answered(t, "register", err, func() (int, []byte) { return reg.StatusCode(), reg.Body }, http.StatusCreated)
	token := reg.JSON201.Data.AccessToken

	key, err := c.CreateApiKeyWithResponse(ctx, nil, goclient.CreateApiKeyJSONRequestBody{Name: "Go client"},
		func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		})
	answered(t, "create an API key", err, func() (int, []byte) { return key.StatusCode(), key.Body }, http.StatusCreated)
	if key.JSON201.Data.Key == "" {
		t.Fatal("create an API key: no key in the answer")
	}

	withKey, err := goclient.NewClientWithResponses(base, goclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("X-API-Key", key.JSON201.Data.Key)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	created, err := withKey.CreateProfileWithResponse(ctx, nil, goclient.CreateProfileJSONRequestBody{Name: "Go client", TemplateId: goclient.TplChromeWinUs})
	answered(t, "create a profile", err, func() (int, []byte) { return created.StatusCode(), created.Body }, http.StatusCreated)
	if got := created.JSON201.Data.Status; got != goclient.Idle {
		t.Fatalf("create a profile: status %q, want %q", got, goclient.Idle)
	}
	id := created.JSON201.Data.Id

	launched, err := withKey.LaunchProfileWithResponse(ctx, id, nil, goclient.LaunchProfileJSONRequestBody{})
	answered(t, "launch", err, func() (int, []byte) { return launched.StatusCode(), launched.Body }, http.StatusOK)
	if cdp := launched.JSON200.Data.Session.CdpUrl; cdp == nil || *cdp == "" {
		t.Fatalf("launch: no cdpUrl: %s", launched.Body)
	}
	running, err := withKey.GetProfileWithResponse(ctx, id, nil)
	answered(t, "read the launched profile", err, func() (int, []byte) { return running.StatusCode(), running.Body }, http.StatusOK)
	if p := running.JSON200.Data; p.Status != goclient.Running || p.Session == nil {
		t.Fatalf("read the launched profile: status %q, session %v; want %q with a session", p.Status, p.Session, goclient.Running)
	}

	// Release takes no body.
	released, err := withKey.ReleaseProfileWithResponse(ctx, id, nil)
	answered(t, "release", err, func() (int, []byte) { return released.StatusCode(), released.Body }, http.StatusOK)
	if p := released.JSON200.Data; p.Status != goclient.Idle || p.Session != nil {
		t.Fatalf("release: status %q, session %v; want %q without a session", p.Status, p.Session, goclient.Idle)
	}
}

// answered fails the test unless the call succeeded with the status want;
// answer is called only then, so a failed call's nil response is not read.
func answered(t *testing.T, step string, err error, answer func() (status int, body []byte), want int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	if status, body := answer(); status != want {
		t.Fatalf("%s: status %d, want %d: %s", step, status, want, body)
	}
}
