package api_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// binaryMedia are bodies of bytes (browser data archives) that no example
// in a YAML document could show; their schemas say what they hold.
var binaryMedia = []string{"application/gzip", "application/octet-stream"}

// missingExamples lists the media types of body (a request body or a
// response) that show no example, as "where media-type".
func (d openAPITree) missingExamples(t *testing.T, where string, body any) []string {
	var missing []string
	content, _ := d.deref(t, body)["content"].(map[string]any)
	for media, v := range content {
		m, _ := v.(map[string]any)
		examples, _ := m["examples"].(map[string]any)
		if m["example"] == nil && len(examples) == 0 && !slices.Contains(binaryMedia, media) {
			missing = append(missing, where+" "+media)
		}
	}
	return missing
}

var httpMethods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

// Every request body and every response that has a body shows an example
// in the document (and so on /docs), shared responses in their component.
func TestEveryRequestAndResponseHasAnExample(t *testing.T) {
	t.Parallel()
	doc := parseOpenAPI(t)
	var missing []string
	operations := 0
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			if !slices.Contains(httpMethods, method) {
				continue
			}
			operations++
			o := op.(map[string]any)
			where := strings.ToUpper(method) + " " + path
			if rb, ok := o["requestBody"]; ok {
				missing = append(missing, doc.missingExamples(t, where+" request", rb)...)
			}
			for status, resp := range o["responses"].(map[string]any) {
				missing = append(missing, doc.missingExamples(t, fmt.Sprintf("%s -> %s", where, status), resp)...)
			}
		}
	}
	if operations < 50 {
		t.Fatalf("found %d operations in openapi.yaml; the walk is broken", operations)
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("no example: %s", m)
	}
}

// The document shows one example of every event type a webhook endpoint
// receives, each a body of that type.
func TestEveryWebhookEventHasAnExample(t *testing.T) {
	t.Parallel()
	doc := parseOpenAPI(t)
	types := doc.at(t, "#/components/schemas/EventType")["enum"].([]any)
	if len(types) != 10 {
		t.Fatalf("%d event types in the document, want the 10 of SPEC section 6", len(types))
	}
	body := doc.at(t, "#/webhooks/event/post/requestBody")
	examples, _ := body["content"].(map[string]any)["application/json"].(map[string]any)["examples"].(map[string]any)
	shown := map[string]int{}
	for name, ex := range examples {
		value, _ := doc.deref(t, ex)["value"].(map[string]any)
		typ, _ := value["type"].(string)
		if typ == "" {
			t.Errorf("example %s shows no event type", name)
			continue
		}
		if _, ok := value["data"].(map[string]any); !ok || value["id"] == nil || value["created_at"] == nil {
			t.Errorf("example %s is not a whole event (id, type, created_at, data): %v", name, value)
		}
		shown[typ]++
	}
	for _, typ := range types {
		if shown[typ.(string)] == 0 {
			t.Errorf("no example of the event %s", typ)
		}
	}
}
