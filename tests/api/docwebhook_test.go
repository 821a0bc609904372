package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
)

// webhookEntry is the entry of the document's top-level webhooks that
// describes every delivery.
const webhookEntry = "event"

// eventDoc is the document's description of a delivery: a validator of the
// document and the path item of its webhook entry, whose POST has the
// headers and the request body (the event) that every delivery carries.
var eventDoc struct {
	once sync.Once
	v    validator.Validator
	item *v3.PathItem
	err  error
	// mu serialises validation: the validator renders schemas lazily and
	// is not safe for concurrent use, and receivers answer concurrently.
	mu sync.Mutex
}

func loadEventDoc() {
	doc, err := libopenapi.NewDocument(httpapi.OpenAPIDocument())
	if err != nil {
		eventDoc.err = err
		return
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		eventDoc.err = err
		return
	}
	item, ok := model.Model.Webhooks.Get(webhookEntry)
	if !ok || item.Post == nil || item.Post.RequestBody == nil {
		eventDoc.err = fmt.Errorf("openapi.yaml has no webhooks.%s.post with a request body", webhookEntry)
		return
	}
	eventDoc.v, eventDoc.item = validator.NewValidatorFromV3Model(&model.Model), item
}

// eventMismatches checks one delivery, its headers and its body, against
// the document's webhook entry with libopenapi-validator, and returns each
// way it does not match, naming where (a header, or the body's JSON path)
// and the value found there. None: the delivery is as documented.
func eventMismatches(header http.Header, body []byte) ([]string, error) {
	eventDoc.once.Do(loadEventDoc)
	if eventDoc.err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", eventDoc.err)
	}
	req, err := http.NewRequest(http.MethodPost, "http://receiver.test/"+webhookEntry, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = header.Clone()
	eventDoc.mu.Lock()
	ok, errs := eventDoc.v.ValidateHttpRequestSyncWithPathItem(req, eventDoc.item, "/"+webhookEntry)
	eventDoc.mu.Unlock()
	if ok {
		return nil, nil
	}
	var decoded any
	_ = json.Unmarshal(body, &decoded)
	var out []string
	for _, e := range errs {
		out = append(out, describeMismatch(e, header, decoded)...)
	}
	return out, nil
}

// describeMismatch words one validation error: a header's name and value,
// or each schema failure's path in the body and the value there.
func describeMismatch(e *liberrors.ValidationError, header http.Header, body any) []string {
	if len(e.SchemaValidationErrors) == 0 {
		if e.ParameterName != "" {
			return []string{fmt.Sprintf("header %s = %q: %s (%s)", e.ParameterName, header.Get(e.ParameterName), e.Message, e.Reason)}
		}
		return []string{fmt.Sprintf("%s (%s)", e.Message, e.Reason)}
	}
	var out []string
	for _, f := range e.SchemaValidationErrors {
		where, value := "body "+f.FieldPath, valueAt(body, f.InstancePath)
		if e.ParameterName != "" {
			where, value = "header "+e.ParameterName, strconv.Quote(header.Get(e.ParameterName))
		}
		out = append(out, fmt.Sprintf("%s = %s: %s", where, value, f.Reason))
	}
	return out
}

// valueAt is the JSON of what body holds at path (object keys and array
// indexes from the top).
func valueAt(body any, path []string) string {
	node := body
	for _, step := range path {
		switch n := node.(type) {
		case map[string]any:
			node = n[step]
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(n) {
				return "(absent)"
			}
			node = n[i]
		default:
			return "(absent)"
		}
	}
	raw, err := json.Marshal(node)
	if err != nil {
		return fmt.Sprint(node)
	}
	return string(raw)
}

// checkDelivery fails t for each way a delivery does not match the
// document.
func checkDelivery(t *testing.T, header http.Header, body []byte) {
	t.Helper()
	mismatches, err := eventMismatches(header, body)
	if err != nil {
		t.Error(err)
		return
	}
	for _, m := range mismatches {
		t.Errorf("a %s delivery does not match openapi.yaml's webhooks.%s: %s (body %s)", header.Get("X-Service-Event-Type"), webhookEntry, m, truncate(body))
	}
}
