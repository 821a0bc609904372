// Package arch checks the dependency rules of the hexagonal layout: every
// package's transitive dependencies, as `go list` reports them, must stay
// inside what its layer may know.
package arch

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/profilesvc/profilesvc"

type pkgInfo struct {
	path    string
	doc     string
	deps    []string
	imports []string
}

func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Deps ","}}|{{join .Imports ","}}|{{.Doc}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkgInfo
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 4)
		pkgs = append(pkgs, pkgInfo{path: parts[0], deps: split(parts[1]), imports: split(parts[2]), doc: parts[3]})
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
// owners maps each storage port to the application package that owns it.
func rule(r, dep string, owners map[string]string) string {
	depRel, own := rel(dep)
	switch {
	case under(r, "domain"):
		if !isStd(dep) && !isLib(dep, "golang.org/x") && !(own && under(depRel, "domain")) {
			return "domain imports only the standard library and golang.org/x modules"
		}
	case under(r, "ports"):
		// golang.org/x modules arrive through the domain.
		if !isStd(dep) && !isLib(dep, "golang.org/x") && !(own && under(depRel, "domain", "ports")) {
			return "ports import only domain, the standard library and golang.org/x modules"
		}
	case under(r, "application"):
		if !isStd(dep) && !isLib(dep, "golang.org/x") && !(own && under(depRel, "domain", "ports", "application")) {
			return "application imports only ports, domain, the standard library and golang.org/x modules"
		}
		if own {
			return storageRule(r, depRel, owners)
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
	case under(r, "adapters/cdprelay"):
		// The CDP relay is a second driving adapter, mounted in the HTTP
		// transport's router: its routes, errors, access log and metrics
		// are the transport's, so it may know adapters/http (never the
		// other way round: the transport knows no other adapter).
		if own && !under(depRel, "domain", "ports", "application", "adapters/http", "adapters/cdprelay") {
			return "the CDP relay drives the application through the HTTP transport and knows no other adapter"
		}
		if isLib(dep, "github.com/uptrace/bun", "github.com/redis/go-redis", "go.uber.org/fx") {
			return "the CDP relay knows no storage, cache or fx"
		}
	case under(r, "adapters/web"):
		// The dashboard is a driving adapter mounted in the HTTP
		// transport's router, as the CDP relay is: it drives the
		// application and answers through the transport's access log.
		if own && !under(depRel, "domain", "ports", "application", "adapters/http", "adapters/web") {
			return "the dashboard drives the application through the HTTP transport and knows no other adapter"
		}
		if isLib(dep, "github.com/uptrace/bun", "github.com/redis/go-redis", "go.uber.org/fx") {
			return "the dashboard knows no storage, cache or fx"
		}
	case under(r, "adapters/wiring"):
		// The composition root may know everything.
	case under(r, "adapters"):
		// adapters/netguard is the one SSRF guard of every adapter that
		// dials an address a customer chose: one rule, written once.
		// adapters/proxydial is the one handshake with an upstream proxy,
		// for the adapters that carry traffic through one.
		if own && !under(depRel, "domain", "ports", "migrations", adapterRoot(r)) && depRel != sharedGuard &&
			!(depRel == sharedProxyDial && proxyDialUsers[adapterRoot(r)]) {
			return "a driven adapter knows only ports, domain, migrations and itself (" + adapterRoot(r) + ")"
		}
		if isLib(dep, "github.com/gorilla/mux", "go.uber.org/fx") {
			return "a driven adapter knows no HTTP router or fx"
		}
	}
	return ""
}

// ownerInDoc finds the owner a storage port names in its package doc:
// "Package profilestore is the storage port of application/profiles: ...".
// The port states it where it is written, so a new module adds no line here.
var ownerInDoc = regexp.MustCompile(`is the storage port of (application/[a-z]+)\b`)

// storeOwners reads the owner of every storage port from its doc.
func storeOwners(pkgs []pkgInfo) map[string]string {
	owners := map[string]string{}
	for _, p := range pkgs {
		r, ok := rel(p.path)
		if !ok || !isStorePort(r) {
			continue
		}
		if m := ownerInDoc.FindStringSubmatch(p.doc); m != nil {
			owners[r] = m[1]
		}
	}
	return owners
}

// isStorePort reports whether a package at r is a module's storage port.
func isStorePort(r string) bool {
	return strings.HasPrefix(r, "ports/") && strings.HasSuffix(r, "store") && strings.Count(r, "/") == 1
}

// storageRule reports why the application package at r may not depend on
// depRel, a package of this module, or "".
func storageRule(r, depRel string, owners map[string]string) string {
	if under(depRel, "ports/storage") {
		return "the whole store is the composition root's; a use case depends on its module's repositories and ports.UnitOfWork"
	}
	if !isStorePort(depRel) {
		return ""
	}
	owner, ok := owners[depRel]
	if !ok {
		return depRel + ` names no owner: its package doc must say "is the storage port of application/<module>"`
	}
	if !under(r, owner) {
		return depRel + " is the storage port of " + owner + "; declare the few calls this module needs in its own package"
	}
	return ""
}

// sharedGuard is the one adapter package other adapters may depend on.
const sharedGuard = "adapters/netguard"

// sharedProxyDial opens tunnels through an upstream proxy. The proxy check
// and the browser's forwarder both go through one: the handshake, its
// limits and the SOCKS5 client are written once, each adapter keeping its
// own words for the failures.
const sharedProxyDial = "adapters/proxydial"

// proxyDialUsers are the adapters that may depend on sharedProxyDial.
var proxyDialUsers = map[string]bool{"adapters/prober": true, "adapters/browser": true}

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
	case under(r, "adapters/cdprelay") && !under(depRel, "domain", "application", "adapters/http", "adapters/cdprelay"):
		return "the CDP relay calls application services and knows no ports"
	}
	return ""
}

func TestLayersImportOnlyWhatTheyMay(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	owners := storeOwners(pkgs)
	for _, p := range pkgs {
		r, ok := rel(p.path)
		if !ok {
			continue
		}
		for _, dep := range p.deps {
			if why := rule(r, dep, owners); why != "" {
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
		{"domain/account", "golang.org/xtra"},
		{"domain/account", module + "/ports"},
		{"ports", "go.uber.org/zap"},
		{"application/auth", "github.com/gorilla/mux"},
		{"application/auth", module + "/adapters/store/memory"},
		{"adapters/http", module + "/adapters/store/bunstore"},
		{"adapters/http", "github.com/uptrace/bun"},
		{"adapters/http", module + "/adapters/cdprelay"},
		{"adapters/cdprelay", module + "/adapters/store/memory"},
		{"adapters/cdprelay", module + "/adapters/browser/chromium"},
		{"adapters/cdprelay", "go.uber.org/fx"},
		{"adapters/cdprelay", "github.com/redis/go-redis/v9"},
		{"adapters/store/memory", module + "/application/auth"},
		{"adapters/profilecache", module + "/adapters/store/memory"},
		{"adapters/webhook", module + "/adapters/netguard/netguardtest"},
		{"adapters/netguard", module + "/adapters/webhook"},
		{"adapters/webhook", module + "/adapters/proxydial"},
		{"adapters/proxydial", module + "/adapters/prober"},
		{"config", module + "/domain"},
		{"application/profiles", module + "/ports/teamstore"},
		{"application/auth", module + "/ports/profilestore"},
		{"application/teams", module + "/ports/storage"},
		{"application/paging", module + "/ports/webhookstore"},
		{"application/proxies", module + "/ports/proxystore"},
		{"application/profiles", module + "/ports/snapshotstore"},
		{"application/browserdata", module + "/ports/snapshotstore"},
		{"application/snapshots", module + "/ports/profilestore"},
	}
	if directRule("adapters/http", module+"/ports") == "" {
		t.Error("directRule allows adapters/http -> ports")
	}
	if directRule("adapters/cdprelay", module+"/ports") == "" {
		t.Error("directRule allows adapters/cdprelay -> ports")
	}
	if why := directRule("adapters/cdprelay", module+"/adapters/http"); why != "" {
		t.Errorf("directRule refuses adapters/cdprelay -> adapters/http: %s", why)
	}
	if directRule("cmd/profilesvc", module+"/application/auth") == "" {
		t.Error("directRule allows cmd -> application")
	}
	owners := map[string]string{
		"ports/accountstore":  "application/auth",
		"ports/teamstore":     "application/teams",
		"ports/profilestore":  "application/profiles",
		"ports/snapshotstore": "application/snapshots",
		"ports/webhookstore":  "application/webhooks",
	}
	for _, b := range bad {
		if rule(b.pkg, b.dep, owners) == "" {
			t.Errorf("rule allows %s -> %s", b.pkg, b.dep)
		}
	}
	good := []struct{ pkg, dep string }{
		{"domain/account", "time"},
		{"domain/account", "golang.org/x/text/unicode/norm"},
		{"application/auth", module + "/ports"},
		{"adapters/store/bunstore", "github.com/uptrace/bun"},
		{"adapters/store/bunstore", module + "/migrations"},
		{"adapters/http", module + "/application/auth"},
		{"adapters/cdprelay", module + "/adapters/http"},
		{"adapters/cdprelay", module + "/application/profiles"},
		{"adapters/cdprelay", "github.com/gorilla/mux"},
		{"adapters/cdprelay", "github.com/coder/websocket"},
		{"adapters/wiring", "go.uber.org/fx"},
		{"application/profiles", module + "/ports/profilestore"},
		{"application/auth", module + "/ports/accountstore"},
		{"application/webhooks", module + "/ports/webhookstore"},
		{"application/snapshots", module + "/ports/snapshotstore"},
		{"application/snapshots", module + "/application/paging"},
		{"application/teams", module + "/domain/account"},
		{"adapters/store/memory", module + "/ports/storage"},
		{"adapters/webhook", module + "/adapters/netguard"},
		{"adapters/prober", module + "/adapters/netguard"},
		{"adapters/prober", module + "/adapters/proxydial"},
		{"adapters/browser/forwarder", module + "/adapters/proxydial"},
		{"adapters/browser/chromium", module + "/adapters/proxydial"},
	}
	for _, g := range good {
		if why := rule(g.pkg, g.dep, owners); why != "" {
			t.Errorf("rule refuses %s -> %s: %s", g.pkg, g.dep, why)
		}
	}
}

// TestEveryStoragePortHasAnOwner: each storage port names, in its doc, an
// application package that exists; and the docs read today give the owners
// this layout has.
func TestEveryStoragePortHasAnOwner(t *testing.T) {
	pkgs := listPackages(t)
	found := map[string]bool{}
	for _, p := range pkgs {
		if r, ok := rel(p.path); ok {
			found[r] = true
		}
	}
	owners := storeOwners(pkgs)
	for r := range found {
		if _, ok := owners[r]; isStorePort(r) && !ok {
			t.Errorf("%s is a storage port whose doc names no owner", r)
		}
	}
	for port, owner := range owners {
		if !found[owner] {
			t.Errorf("%s names %s as its owner, but go list finds no such package", port, owner)
		}
	}
	for port, owner := range map[string]string{
		"ports/accountstore":  "application/auth",
		"ports/profilestore":  "application/profiles",
		"ports/snapshotstore": "application/snapshots",
		"ports/teamstore":     "application/teams",
		"ports/webhookstore":  "application/webhooks",
	} {
		if owners[port] != owner {
			t.Errorf("owner of %s read from its doc: %q, want %q", port, owners[port], owner)
		}
	}
}
