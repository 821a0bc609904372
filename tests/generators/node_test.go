package generators_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tsGenerator is a TypeScript generator and the flow that drives its client.
type tsGenerator struct {
	name string
	// command is the generator's command in node_modules/.bin and its
	// arguments, given the served document's URL and the output directory.
	command func(url, out string) []string
	// out is where the flow imports the generated code from.
	out string
	// flow is the flow's source in tests/generators/node.
	flow string
	// packages are the npm packages of the generator and its client.
	packages []string
}

// tsGenerators are the generators of tests/generators/node/package.json, at
// their default settings.
var tsGenerators = []tsGenerator{
	{
		name: "openapi-typescript with openapi-fetch",
		command: func(url, out string) []string {
			return []string{"openapi-typescript", url, "-o", filepath.Join(out, "schema.d.ts")}
		},
		out:      "generated/openapi-typescript",
		flow:     "openapi-fetch.ts",
		packages: []string{"openapi-typescript", "openapi-fetch"},
	},
	{
		name: "@hey-api/openapi-ts",
		command: func(url, out string) []string {
			return []string{"openapi-ts", "-i", url, "-o", out}
		},
		out:      "generated/hey-api",
		flow:     "hey-api.ts",
		packages: []string{"@hey-api/openapi-ts"},
	},
}

// Each TypeScript generator makes a client of the served document that
// type-checks with tsc and drives the flow under node: register, create an
// API key, and with that key create a profile, launch it and release it.
func TestTypeScriptClientFlows(t *testing.T) {
	t.Parallel()
	nodeDir := nodeTools(t)
	for _, g := range tsGenerators {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			t.Logf("generator: %s, compiler: %s", versions(t, nodeDir, g.packages...), versions(t, nodeDir, "typescript"))
			base := startService(t)
			ctx, cancel := context.WithTimeout(context.Background(), flowTimeout)
			defer cancel()
			dir := tsProject(t, nodeDir, g.flow)

			gen := g.command(base+"/openapi.yaml", filepath.Join(dir, g.out))
			run(ctx, t, dir, filepath.Join(nodeDir, "node_modules", ".bin", gen[0]), gen[1:]...)
			run(ctx, t, dir, "node", filepath.Join(nodeDir, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json")
			out := run(ctx, t, dir, "node", filepath.Join("out", strings.TrimSuffix(g.flow, ".ts")+".js"), base)
			t.Log(strings.TrimSpace(out))
		})
	}
}

// tsProject lays out a temporary TypeScript project for flow: the flow, the
// packages of tests/generators/node, and a tsconfig that extends its own
// and compiles the flow with the code it imports into out/ as ES modules.
func tsProject(t *testing.T, nodeDir, flow string) string {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(nodeDir, flow))
	if err != nil {
		t.Fatal(err)
	}
	tsconfig, err := json.Marshal(map[string]any{
		"extends":         filepath.Join(nodeDir, "tsconfig.json"),
		"compilerOptions": map[string]string{"rootDir": ".", "outDir": "out"},
		"files":           []string{flow},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		flow:            string(src),
		"package.json":  `{"type": "module"}`,
		"tsconfig.json": string(tsconfig),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(nodeDir, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// versions names the installed packages of nodeDir with their versions.
func versions(t *testing.T, nodeDir string, packages ...string) string {
	t.Helper()
	named := make([]string, 0, len(packages))
	for _, pkg := range packages {
		raw, err := os.ReadFile(filepath.Join(nodeDir, "node_modules", pkg, "package.json"))
		if err != nil {
			t.Fatal(err)
		}
		var manifest struct{ Version string }
		if err := json.Unmarshal(raw, &manifest); err != nil {
			t.Fatalf("%s's package.json: %v", pkg, err)
		}
		named = append(named, pkg+" "+manifest.Version)
	}
	return strings.Join(named, " + ")
}

// run runs name in dir and returns its output, failing the test with that
// output when it fails.
func run(ctx context.Context, t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// nodeTools finds Node.js, npm and the packages of tests/generators/node,
// or skips the test saying what to install; with CI set, a missing piece
// fails it instead.
func nodeTools(t *testing.T) string {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		msg := "the TypeScript clients need " + what + " (Node.js 20 or later with npm, then: npm ci --prefix tests/generators/node)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "; CI is set, so they must run")
		}
		t.Skip(msg)
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(tool + ": " + err.Error())
		}
	}
	nodeDir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"openapi-typescript", "openapi-fetch", "@hey-api/openapi-ts", "typescript"} {
		if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", pkg, "package.json")); err != nil {
			missing(pkg + " in tests/generators/node/node_modules: " + err.Error())
		}
	}
	return nodeDir
}
