// Package arch checks the dependency rules of the hexagonal layout: every
// package's transitive dependencies, as `go list` reports them, must stay
// inside what its layer may know.
package arch

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/profilesvc/profilesvc"

type pkgInfo struct {
	path    string
	deps    []string
	imports []string
}

func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Deps ","}}|{{join .Imports ","}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkgInfo
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		pkgs = append(pkgs, pkgInfo{path: parts[0], deps: split(parts[1]), imports: split(parts[2])})
	}
	return pkgs
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func isStd(p string) bool { return !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") }

func rel(p string) (string, bool) {
	if p == module {
		return "", true
	}
	r, ok := strings.CutPrefix(p, module+"/")
	return r, ok
}

func under(r string, prefixes ...string) bool {
	for _, p := range prefixes {
		if r == p || strings.HasPrefix(r, p+"/") {
			return true
		}
	}
	return false
}

func isLib(p string, libs ...string) bool {
	for _, l := range libs {
		if p == l || strings.HasPrefix(p, l+"/") {
			return true
		}
	}
	return false
}

// rule reports why dep may not be a dependency of a package at r, or "".
func rule(r, dep string) string {
	depRel, own := rel(dep)
	switch {
	case under(r, "domain"):
		if !isStd(dep) && !(own && under(depRel, "domain")) {
			return "domain imports only the standard library"
		}
	case under(r, "ports"):
		if !isStd(dep) && !(own && under(depRel, "domain", "ports")) {
			return "ports import only domain and the standard library"
		}
	case under(r, "application"):
		if !isStd(dep) && !(own && under(depRel, "domain", "ports", "application")) {
			return "application imports only ports, domain and the standard library"
		}
		if own {
			return storageRule(r, depRel)
		}
	case under(r, "config"):
		if own {
			return "config knows no other layer"
		}
	case under(r, "adapters/http"):
		// ports arrive through the application's signatures; directImports
		// keeps the handlers themselves from reaching for them.
		if own && !under(depRel, "domain", "ports", "application", "adapters/http") {
			return "the HTTP adapter drives the application and knows no other adapter"
		}
		if isLib(dep, "github.com/uptrace/bun", "github.com/redis/go-redis", "go.uber.org/fx") {
			return "the HTTP adapter knows no storage, cache or fx"
		}
	case under(r, "adapters/wiring"):
		// The composition root may know everything.
	case under(r, "adapters"):
		if own && !under(depRel, "domain", "ports", "migrations", adapterRoot(r)) {
			return "a driven adapter knows only ports, domain, migrations and itself (" + adapterRoot(r) + ")"
		}
		if isLib(dep, "github.com/gorilla/mux", "go.uber.org/fx") {
			return "a driven adapter knows no HTTP router or fx"
		}
	}
	return ""
}

// storeOwners names the application package that owns each module's storage
// port. Another module that needs a little of it declares that little itself.
var storeOwners = map[string]string{
	"ports/accountstore": "application/auth",
	"ports/teamstore":    "application/teams",
	"ports/profilestore": "application/profiles",
	"ports/webhookstore": "application/webhooks",
}

// isStorePort reports whether a package at r is a module's storage port.
func isStorePort(r string) bool {
	return strings.HasPrefix(r, "ports/") && strings.HasSuffix(r, "store") && strings.Count(r, "/") == 1
}

// storageRule reports why the application package at r may not depend on
// depRel, a package of this module, or "".
func storageRule(r, depRel string) string {
	if under(depRel, "ports/storage") {
		return "the whole store is the composition root's; a use case depends on its module's repositories and ports.UnitOfWork"
	}
	if !isStorePort(depRel) {
		return ""
	}
	owner, ok := storeOwners[depRel]
	if !ok {
		return depRel + " has no owner in storeOwners"
	}
	if !under(r, owner) {
		return depRel + " is the storage port of " + owner + "; declare the few calls this module needs in its own package"
	}
	return ""
}

// adapterRoot is the adapter a package belongs to: adapters/<kind>, or
// adapters/store/<name> for stores.
func adapterRoot(r string) string {
	parts := strings.Split(r, "/")
	if len(parts) >= 3 && parts[1] == "store" {
		return strings.Join(parts[:3], "/")
	}
	return strings.Join(parts[:2], "/")
}

// directRule reports why a package at r may not import imp directly, or "".
func directRule(r, imp string) string {
	depRel, own := rel(imp)
	if !own {
		return ""
	}
	switch {
	case under(r, "cmd") && !under(depRel, "config", "adapters/wiring"):
		return "cmd knows only config and adapters/wiring"
	case under(r, "adapters/http") && !under(depRel, "domain", "application", "adapters/http"):
		return "the HTTP adapter calls application services and knows no ports"
	}
	return ""
}

func TestLayersImportOnlyWhatTheyMay(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		r, ok := rel(p.path)
		if !ok {
			continue
		}
		for _, dep := range p.deps {
			if why := rule(r, dep); why != "" {
				t.Errorf("%s depends on %s: %s", r, dep, why)
			}
		}
		for _, imp := range p.imports {
			if why := directRule(r, imp); why != "" {
				t.Errorf("%s imports %s: %s", r, imp, why)
			}
		}
	}
}

// TestRulesCatchViolations keeps the rules honest: each forbidden edge below
// must be reported.
func TestRulesCatchViolations(t *testing.T) {
	bad := []struct{ pkg, dep string }{
		{"domain/account", "github.com/uptrace/bun"},
		{"domain/account", module + "/ports"},
		{"ports", "go.uber.org/zap"},
		{"application/auth", "github.com/gorilla/mux"},
		{"application/auth", module + "/adapters/store/memory"},
		{"adapters/http", module + "/adapters/store/bunstore"},
		{"adapters/http", "github.com/uptrace/bun"},
		{"adapters/store/memory", module + "/application/auth"},
		{"adapters/cache", module + "/adapters/store/memory"},
		{"config", module + "/domain"},
		{"application/profiles", module + "/ports/teamstore"},
		{"application/auth", module + "/ports/profilestore"},
		{"application/teams", module + "/ports/storage"},
		{"application/paging", module + "/ports/webhookstore"},
		{"application/proxies", module + "/ports/proxystore"},
	}
	if directRule("adapters/http", module+"/ports") == "" {
		t.Error("directRule allows adapters/http -> ports")
	}
	if directRule("cmd/profilesvc", module+"/application/auth") == "" {
		t.Error("directRule allows cmd -> application")
	}
	for _, b := range bad {
		if rule(b.pkg, b.dep) == "" {
			t.Errorf("rule allows %s -> %s", b.pkg, b.dep)
		}
	}
	good := []struct{ pkg, dep string }{
		{"domain/account", "time"},
		{"application/auth", module + "/ports"},
		{"adapters/store/bunstore", "github.com/uptrace/bun"},
		{"adapters/store/bunstore", module + "/migrations"},
		{"adapters/http", module + "/application/auth"},
		{"adapters/wiring", "go.uber.org/fx"},
		{"application/profiles", module + "/ports/profilestore"},
		{"application/auth", module + "/ports/accountstore"},
		{"application/webhooks", module + "/ports/webhookstore"},
		{"application/teams", module + "/domain/account"},
		{"adapters/store/memory", module + "/ports/storage"},
	}
	for _, g := range good {
		if why := rule(g.pkg, g.dep); why != "" {
			t.Errorf("rule refuses %s -> %s: %s", g.pkg, g.dep, why)
		}
	}
}

// TestEveryStoragePortHasAnOwner keeps storeOwners complete: a new module's
// storage port must name the application package that owns it, and every
// owner named must exist.
func TestEveryStoragePortHasAnOwner(t *testing.T) {
	found := map[string]bool{}
	for _, p := range listPackages(t) {
		if r, ok := rel(p.path); ok {
			found[r] = true
		}
	}
	for r := range found {
		if _, ok := storeOwners[r]; isStorePort(r) && !ok {
			t.Errorf("%s is a storage port without an owner in storeOwners", r)
		}
	}
	for port, owner := range storeOwners {
		if !found[port] || !found[owner] {
			t.Errorf("storeOwners names %s owned by %s, but go list finds port %v, owner %v", port, owner, found[port], found[owner])
		}
	}
}
