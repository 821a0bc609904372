package config

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every variable the service reads is in the README's configuration
// table, and every variable of the table is read: the list help prints
// comes from the code that reads them, the table from the people who
// document them.
func TestVariablesAreTheREADMEs(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "\n## Configuration\n")
	end := strings.Index(doc[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("no Configuration section in README.md")
	}
	documented := map[string]bool{}
	name := regexp.MustCompile("`([A-Z][A-Z0-9_]+)`")
	for _, line := range strings.Split(doc[start:start+1+end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			documented[m[1]] = true
		}
	}
	// Go's own, which its runtime reads.
	delete(documented, "GOGC")
	delete(documented, "GOMEMLIMIT")

	var read []string
	for _, v := range Variables() {
		read = append(read, v.Name)
		if !documented[v.Name] {
			t.Errorf("%s is read but not in README.md's configuration table", v.Name)
		}
	}
	for n := range documented {
		if !slices.Contains(read, n) {
			t.Errorf("%s is in README.md's configuration table but never read", n)
		}
	}
}

func TestVariablesShowTheirDefaults(t *testing.T) {
	want := map[string]string{
		"HTTP_ADDR": ":8080", "REDIS_TIMEOUT": "250ms", "BROWSERS_MAX": "4", "ALLOW_PRIVATE_TARGETS": "false",
		"PROFILE_DATA_MAX": "512MiB", "RATE_LIMIT": "600/1m", "REDIS_URL": "",
	}
	for _, v := range Variables() {
		if d, ok := want[v.Name]; ok {
			if v.Default != d {
				t.Errorf("%s: default %q, want %q", v.Name, v.Default, d)
			}
			delete(want, v.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("not listed: %v", want)
	}
}
