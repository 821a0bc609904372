package api_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
)

// domainConsts are the values of the string constants of type typeName
// declared in the domain package at dir (from the module's root), read
// from its source, so that a constant added there is seen here.
func domainConsts(t *testing.T, dir, typeName string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the sources of %s: %v", dir, err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				if typ, ok := vs.Type.(*ast.Ident); !ok || typ.Name != typeName {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: a constant of type %s is not a string literal", fset.Position(v.Pos()), typeName)
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, s)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s declares no constant of type %s", dir, typeName)
	}
	return out
}

// texts is each value as the document's YAML shows it.
func texts[T any](values ...T) []string {
	out := make([]string, 0, len(values))
	for _, v := range values {
		if s := fmt.Sprint(v); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// templateField is one field of every template of the catalogue, each
// value once.
func templateField(field func(profile.Template) string) []string {
	var out []string
	for _, tpl := range profile.Templates() {
		out = append(out, field(tpl))
	}
	return texts(out...)
}

// The document declares, as the enum of the schema that carries it, every
// value of each fixed set of values of the domain that the service sends
// (in responses or in webhook events), and no value the domain lacks.
// Responses and deliveries are also checked against these enums as the
// suites receive them; this test covers the values no suite makes happen.
func TestDocumentDeclaresEveryValueOfTheDomain(t *testing.T) {
	t.Parallel()
	// The webhook event's schema is written out in its entry (no component).
	const eventData = "#/webhooks/event/post/requestBody/content/application~1json/schema/properties/data/properties"
	doc := parseOpenAPI(t)
	eventTypes := texts(event.Types...)
	for _, c := range []struct {
		pointer string
		values  []string
	}{
		{"#/components/schemas/EventType", eventTypes},
		{"#/components/schemas/EventSubscription", append(slices.Clone(eventTypes), "*")},
		{"#/components/schemas/EventType", domainConsts(t, "domain/event", "Type")},
		{eventData + "/reason", domainConsts(t, "domain/profile", "StopReason")},
		{"#/components/schemas/ProfileStatus", domainConsts(t, "domain/profile", "Status")},
		{"#/components/schemas/Role", domainConsts(t, "domain/team", "Role")},
		{"#/components/schemas/MemberStatus", domainConsts(t, "domain/team", "Status")},
		{"#/components/schemas/DeliveryStatus", domainConsts(t, "domain/webhook", "Status")},
		{"#/components/schemas/ProxyType", domainConsts(t, "domain/proxy", "Type")},
		{eventData + "/proxy/properties/type", domainConsts(t, "domain/proxy", "Type")},
		{"#/components/schemas/ProxyStatus", domainConsts(t, "domain/proxy", "Status")},
		{"#/components/schemas/Snapshot/properties/kind", domainConsts(t, "domain/snapshot", "Kind")},
		{"#/components/schemas/Cookie/properties/sameSite", domainConsts(t, "domain/browserdata", "SameSite")},
		{"#/components/schemas/Platform", texts(profile.Platforms...)},
		{"#/components/schemas/Screen/properties/colorDepth", texts(profile.ColorDepths...)},
		{"#/components/schemas/Navigator/properties/deviceMemory", texts(profile.DeviceMemories...)},
		{"#/components/schemas/ClientHints/properties/platform", texts(profile.ClientHintPlatforms...)},
		{"#/components/schemas/ClientHints/properties/architecture", texts(profile.Architectures...)},
		{"#/components/schemas/ClientHints/properties/bitness", texts(profile.Bitnesses...)},
		{"#/components/schemas/WebRTCPolicy", texts(profile.WebRTCPolicies...)},
		{"#/components/schemas/TemplateRef", templateField(func(tpl profile.Template) string { return tpl.ID })},
		{"#/components/schemas/TemplateName", templateField(func(tpl profile.Template) string { return tpl.Name })},
		{"#/components/schemas/Template/properties/os", templateField(func(tpl profile.Template) string { return tpl.OS })},
		{"#/components/schemas/Browser", templateField(func(tpl profile.Template) string { return tpl.Browser })},
	} {
		var declared []string
		for _, v := range asList(doc.at(t, c.pointer)["enum"]) {
			declared = append(declared, fmt.Sprint(v))
		}
		if len(declared) == 0 {
			t.Errorf("%s declares no enum; the service sends only %q", c.pointer, c.values)
			continue
		}
		if undeclared := missing(c.values, declared); len(undeclared) > 0 {
			t.Errorf("%s does not declare %q, which the service sends", c.pointer, undeclared)
		}
		if extra := missing(declared, c.values); len(extra) > 0 {
			t.Errorf("%s declares %q, which the service never sends", c.pointer, extra)
		}
	}
}
