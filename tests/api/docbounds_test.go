package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/domain/event"
)

// openAPITree is openapi.yaml as plain values, to read the bounds it
// declares.
type openAPITree map[string]any

func parseOpenAPI(t *testing.T) openAPITree {
	t.Helper()
	// Into the plain map type: yaml.v3 gives nested objects the type of the
	// outermost map.
	var doc map[string]any
	if err := yaml.Unmarshal(httpapi.OpenAPIDocument(), &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	return doc
}

// at is the node at a JSON pointer ("#/components/schemas/Name"), each $ref
// on the way followed.
func (d openAPITree) at(t *testing.T, pointer string) map[string]any {
	t.Helper()
	var node any = map[string]any(d)
	for _, token := range strings.Split(strings.TrimPrefix(pointer, "#/"), "/") {
		m := d.deref(t, node)
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		next, ok := m[token]
		if !ok {
			t.Fatalf("openapi.yaml has no %s (at %q)", pointer, token)
		}
		node = next
	}
	return d.deref(t, node)
}

func (d openAPITree) deref(t *testing.T, node any) map[string]any {
	t.Helper()
	m, ok := node.(map[string]any)
	if !ok {
		t.Fatalf("openapi.yaml: %v is not an object", node)
	}
	if ref, ok := m["$ref"].(string); ok {
		return d.at(t, ref)
	}
	return m
}

// param is the schema of the parameter called name of an operation.
func (d openAPITree) param(t *testing.T, path, method, name string) map[string]any {
	t.Helper()
	op := d.at(t, "#/paths/"+strings.ReplaceAll(path, "/", "~1")+"/"+method)
	for _, p := range op["parameters"].([]any) {
		if pm := d.deref(t, p); pm["name"] == name {
			return d.deref(t, pm["schema"])
		}
	}
	t.Fatalf("openapi.yaml: %s %s has no parameter %s", method, path, name)
	return nil
}

// bound reads an integer keyword (maxLength, maxItems, maximum) of schema.
func bound(t *testing.T, schema map[string]any, keyword string) int {
	t.Helper()
	n, ok := schema[keyword].(int)
	if !ok {
		t.Fatalf("openapi.yaml: %v has no integer %s", schema, keyword)
	}
	return n
}

// emailOf is a valid address of n bytes, distinct for each tag.
func emailOf(tag string, n int) string {
	head, domain := "docbounds."+tag+".", "@example.com"
	return head + strings.Repeat("a", n-len(head)-len(domain)) + domain
}

// textOf is n bytes of ASCII, made of words so that no rule about repeated
// or common values applies.
func textOf(n int) string {
	return strings.Repeat("correct horse battery staple ", n/29+1)[:n]
}

// docBound is one request field whose bound the document declares: bound
// reads it, send makes a valid request with a value of that field of size
// n; at the bound the request gets ok, one past it refused naming field.
type docBound struct {
	name    string
	bound   func(t *testing.T) int
	send    func(t *testing.T, n int) response
	ok      int
	refused int
	field   string
}

// The request bounds the document declares are those the service enforces:
// for a field of every kind, a value at the bound read from openapi.yaml is
// accepted and one past it refused, naming the field.
func TestDocumentedRequestBoundsAreEnforced(t *testing.T) {
	t.Parallel()
	eachProxyBackend(t, nil, func(t *testing.T, h *harness, _ *fakeProber, _ string) {
		d := parseOpenAPI(t)
		a := h.register(t)
		auth := bearer(a.access)
		schema := func(t *testing.T, pointer string) map[string]any { return d.at(t, "#/components/schemas/"+pointer) }
		seq := 0
		next := func() string { seq++; return strconv.Itoa(seq) }
		register := func(email, password, name string) response {
			return h.post("/api/v1/auth/register", map[string]any{"email": email, "password": password, "name": name})
		}
		newProfile := func(body map[string]any) response {
			if _, ok := body["name"]; !ok {
				body["name"] = "Bounds " + next()
			}
			body["templateId"] = windowsTemplate
			return h.post("/api/v1/profiles", body, auth...)
		}
		profileID := h.createProfile(t, a, nil)
		webhook := func(body map[string]any) response {
			for k, v := range map[string]any{"url": "https://" + publicReceiver + "/in", "events": []string{"*"}, "secret": textOf(32)} {
				if _, ok := body[k]; !ok {
					body[k] = v
				}
			}
			return h.post("/v1/webhooks", body, auth...)
		}
		loginBound := bound(t, schema(t, "LoginRequest/properties/email"), "maxLength")
		loginPassword := textOf(40)
		expect(t, register(emailOf("login", loginBound), loginPassword, "Login"), http.StatusCreated)

		cases := []docBound{
			{
				name:  "register name",
				bound: func(t *testing.T) int { return bound(t, schema(t, "RegisterRequest/properties/name"), "maxLength") },
				send: func(_ *testing.T, n int) response {
					return register(emailOf("name"+next(), 64), textOf(40), strings.Repeat("n", n))
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "name",
			},
			{
				name:  "register email",
				bound: func(t *testing.T) int { return bound(t, schema(t, "RegisterRequest/properties/email"), "maxLength") },
				send: func(_ *testing.T, n int) response {
					return register(emailOf("email"+next(), n), textOf(40), "Email")
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "email",
			},
			{
				name:  "register password",
				bound: func(t *testing.T) int { return bound(t, schema(t, "RegisterRequest/properties/password"), "maxLength") },
				send: func(_ *testing.T, n int) response {
					return register(emailOf("password"+next(), 64), textOf(n), "Password")
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "password",
			},
			{
				name:  "login email",
				bound: func(t *testing.T) int { return loginBound },
				send: func(_ *testing.T, n int) response {
					return h.post("/api/v1/auth/login", map[string]any{"email": emailOf("login", n), "password": loginPassword})
				},
				ok: http.StatusOK, refused: http.StatusUnprocessableEntity, field: "email",
			},
			{
				name:  "API key name",
				bound: func(t *testing.T) int { return bound(t, schema(t, "CreateApiKeyRequest/properties/name"), "maxLength") },
				send: func(_ *testing.T, n int) response {
					return h.post("/api/v1/api-keys", map[string]any{"name": strings.Repeat("k", n)}, auth...)
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "name",
			},
			{
				name: "Idempotency-Key",
				bound: func(t *testing.T) int {
					return bound(t, d.param(t, "/api/v1/api-keys", "post", "Idempotency-Key"), "maxLength")
				},
				send: func(_ *testing.T, n int) response {
					unique := next()
					key := unique + strings.Repeat("k", n-len(unique))
					return h.post("/api/v1/api-keys", map[string]any{"name": "Key"}, append(auth, "Idempotency-Key", key)...)
				},
				ok: http.StatusCreated, refused: http.StatusBadRequest, field: "Idempotency-Key",
			},
			{
				name:  "profile tags",
				bound: func(t *testing.T) int { return bound(t, schema(t, "CreateProfileRequest/properties/tags"), "maxItems") },
				send: func(_ *testing.T, n int) response {
					tags := make([]string, n)
					for i := range tags {
						tags[i] = "tag " + strconv.Itoa(i)
					}
					return newProfile(map[string]any{"tags": tags})
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "tags",
			},
			{
				name: "profile tag",
				bound: func(t *testing.T) int {
					return bound(t, schema(t, "CreateProfileRequest/properties/tags/items"), "maxLength")
				},
				send: func(_ *testing.T, n int) response {
					return newProfile(map[string]any{"tags": []string{strings.Repeat("t", n)}})
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "tags",
			},
			{
				name: "profile notes",
				bound: func(t *testing.T) int {
					return bound(t, schema(t, "CreateProfileRequest/properties/notes"), "maxLength")
				},
				send: func(_ *testing.T, n int) response {
					return newProfile(map[string]any{"notes": textOf(n)})
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "notes",
			},
			{
				name: "fingerprint user agent",
				bound: func(t *testing.T) int {
					return bound(t, schema(t, "CreateProfileRequest/properties/fingerprint/properties/userAgent"), "maxLength")
				},
				send: func(_ *testing.T, n int) response {
					return newProfile(map[string]any{"fingerprint": map[string]any{"userAgent": "Mozilla/5.0 " + strings.Repeat("u", n-12)}})
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "fingerprint.userAgent",
			},
			{
				name: "fingerprint screen width",
				bound: func(t *testing.T) int {
					return bound(t, schema(t, "CreateProfileRequest/properties/fingerprint/properties/screen/properties/width"), "maximum")
				},
				send: func(_ *testing.T, n int) response {
					return newProfile(map[string]any{"fingerprint": map[string]any{"screen": map[string]any{"width": n, "height": 1080}}})
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "fingerprint.screen.width",
			},
			{
				name:  "session lease",
				bound: func(t *testing.T) int { return bound(t, schema(t, "LaunchRequest/properties/ttlSeconds"), "maximum") },
				send: func(t *testing.T, n int) response {
					id := h.createProfile(t, a, map[string]any{"name": "Lease " + next()})
					return h.post("/api/v1/profiles/"+id+"/launch", map[string]any{"ttlSeconds": n}, auth...)
				},
				ok: http.StatusOK, refused: http.StatusUnprocessableEntity, field: "ttlSeconds",
			},
			{
				name: "snapshot label",
				bound: func(t *testing.T) int {
					return bound(t, schema(t, "CreateSnapshotRequest/properties/label"), "maxLength")
				},
				send: func(_ *testing.T, n int) response {
					return h.post("/api/v1/time-machine/"+profileID+"/snapshots", map[string]any{"label": strings.Repeat("l", n)}, auth...)
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "label",
			},
			{
				name:  "cookie path",
				bound: func(t *testing.T) int { return bound(t, schema(t, "CookieInput/properties/path"), "maxLength") },
				send: func(_ *testing.T, n int) response {
					cookie := map[string]any{"name": "sid", "value": "v", "domain": "example.com", "path": "/" + strings.Repeat("p", n-1)}
					return h.do(req{method: http.MethodPut, path: "/api/v1/profiles/" + profileID + "/cookies", body: []any{cookie}, headers: pairs(auth)})
				},
				ok: http.StatusOK, refused: http.StatusUnprocessableEntity, field: "cookies[0].path",
			},
			{
				name:  "proxy port",
				bound: func(t *testing.T) int { return bound(t, schema(t, "ProxyRequest/properties/port"), "maximum") },
				send: func(_ *testing.T, n int) response {
					return h.post("/api/v1/proxies", map[string]any{"type": "http", "host": "proxy.example.com", "port": n}, auth...)
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "port",
			},
			{
				name:  "proxy host",
				bound: func(t *testing.T) int { return bound(t, schema(t, "ProxyRequest/properties/host"), "maxLength") },
				send: func(_ *testing.T, n int) response {
					host := strings.Repeat("h", n-len(".example.com")) + ".example.com"
					return h.post("/api/v1/proxies", map[string]any{"type": "socks5", "host": host, "port": 1080}, auth...)
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "host",
			},
			{
				name:  "proxy URL",
				bound: func(t *testing.T) int { return bound(t, schema(t, "ProxyRequest/properties/url"), "maxLength") },
				send: func(_ *testing.T, n int) response {
					head := "http://user:" + url.QueryEscape(proxyPassword) + "@proxy.example.com:"
					return h.post("/api/v1/proxies", map[string]any{"url": head + strings.Repeat("0", n-len(head)-4) + "3128"}, auth...)
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "url",
			},
			{
				name:  "webhook URL",
				bound: func(t *testing.T) int { return bound(t, schema(t, "CreateWebhookRequest/properties/url"), "maxLength") },
				send: func(_ *testing.T, n int) response {
					head := "https://" + publicReceiver + "/"
					return webhook(map[string]any{"url": head + strings.Repeat("w", n-len(head))})
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "url",
			},
			{
				name: "webhook events",
				bound: func(t *testing.T) int {
					return bound(t, schema(t, "CreateWebhookRequest/properties/events"), "maxItems")
				},
				send: func(_ *testing.T, n int) response {
					events := make([]string, n)
					for i := range events {
						events[i] = string(event.Types[i%len(event.Types)])
					}
					return webhook(map[string]any{"events": events})
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "events",
			},
			{
				name: "webhook secret",
				bound: func(t *testing.T) int {
					return bound(t, schema(t, "CreateWebhookRequest/properties/secret"), "maxLength")
				},
				send: func(_ *testing.T, n int) response {
					return webhook(map[string]any{"secret": textOf(n)})
				},
				ok: http.StatusCreated, refused: http.StatusUnprocessableEntity, field: "secret",
			},
			{
				name:  "page limit",
				bound: func(t *testing.T) int { return bound(t, d.param(t, "/api/v1/profiles", "get", "limit"), "maximum") },
				send: func(_ *testing.T, n int) response {
					return h.get("/api/v1/profiles?limit="+strconv.Itoa(n), auth...)
				},
				ok: http.StatusOK, refused: http.StatusBadRequest, field: "limit",
			},
			{
				name:  "profile search",
				bound: func(t *testing.T) int { return bound(t, d.param(t, "/api/v1/profiles", "get", "q"), "maxLength") },
				send: func(_ *testing.T, n int) response {
					return h.get("/api/v1/profiles?q="+strings.Repeat("q", n), auth...)
				},
				ok: http.StatusOK, refused: http.StatusBadRequest, field: "q",
			},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				n := c.bound(t)
				if r := c.send(t, n); r.status != c.ok {
					t.Fatalf("at the bound, %d: status %d, want %d: %s", n, r.status, c.ok, truncate(r.raw))
				}
				r := c.send(t, n+1)
				if r.status != c.refused {
					t.Fatalf("past the bound, %d: status %d, want %d: %s", n+1, r.status, c.refused, truncate(r.raw))
				}
				if named := refusalNames(r, c.field); !named {
					t.Fatalf("past the bound, %d: the answer does not name %s: %s", n+1, c.field, truncate(r.raw))
				}
			})
		}
	})
}

// refusalNames reports whether a refusal names field: in its details, or,
// for a 400 about a parameter or header, in its message.
func refusalNames(r response, field string) bool {
	for _, f := range r.errFields() {
		if f == field {
			return true
		}
	}
	e, _ := r.env["error"].(map[string]any)
	msg := str(e["message"])
	return r.status == http.StatusBadRequest && (strings.HasPrefix(msg, field+" ") || strings.Contains(msg, " "+field+" "))
}

// The documents the service serves whole fit the bounds the document gives
// them.
func TestServedDocumentsFitTheirDocumentedBounds(t *testing.T) {
	t.Parallel()
	d := parseOpenAPI(t)
	h := start(t, options{databaseURL: "memory://"})
	for _, path := range []string{"/openapi.yaml", "/docs"} {
		media := map[string]string{"/openapi.yaml": "application~1yaml", "/docs": "text~1html"}[path]
		limit := bound(t, d.at(t, fmt.Sprintf("#/paths/~1%s/get/responses/200/content/%s/schema", strings.TrimPrefix(path, "/"), media)), "maxLength")
		r := h.get(path)
		expect(t, r, http.StatusOK)
		if len(r.raw) > limit {
			t.Errorf("%s: %d bytes, more than the %d the document declares", path, len(r.raw), limit)
		}
	}
}
