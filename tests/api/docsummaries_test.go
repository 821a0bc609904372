package api_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every operation, the outgoing webhook event's included, has a summary
// that Redoc can show as a sidebar label and a heading: at most 80
// characters of plain words, no Markdown code span. What more there is to
// say belongs in the operation's description.
func TestEveryOperationHasAShortSummary(t *testing.T) {
	t.Parallel()
	doc := parseOpenAPI(t)
	operations := 0
	for _, section := range []string{"paths", "webhooks"} {
		items, _ := doc[section].(map[string]any)
		for path, item := range items {
			for method, op := range item.(map[string]any) {
				if !slices.Contains(httpMethods, method) {
					continue
				}
				operations++
				where := section + ": " + strings.ToUpper(method) + " " + path
				summary, _ := op.(map[string]any)["summary"].(string)
				switch {
				case strings.TrimSpace(summary) == "":
					t.Errorf("%s has no summary", where)
				case utf8.RuneCountInString(summary) > 80:
					t.Errorf("%s: the summary has %d characters, at most 80 fit a heading (move the rest to the description): %q",
						where, utf8.RuneCountInString(summary), summary)
				case strings.Contains(summary, "`"):
					t.Errorf("%s: the summary holds a backtick, which Redoc shows as it is: %q", where, summary)
				}
			}
		}
	}
	if operations < 50 {
		t.Fatalf("found %d operations in openapi.yaml; the walk is broken", operations)
	}
}

// Every tag of the document says what its operations are about: Redoc
// shows the description at the head of the tag's section.
func TestEveryTagHasADescription(t *testing.T) {
	t.Parallel()
	tags, _ := parseOpenAPI(t)["tags"].([]any)
	if len(tags) == 0 {
		t.Fatal("openapi.yaml lists no tags")
	}
	for i, tag := range tags {
		m, _ := tag.(map[string]any)
		if description, _ := m["description"].(string); strings.TrimSpace(description) == "" {
			t.Errorf("tag %d (%v) has no description", i, m["name"])
		}
	}
}
