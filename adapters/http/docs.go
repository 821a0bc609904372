package httpapi

import (
	_ "embed"
	"html/template"
	"net/http"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

//go:embed openapi.yaml
var openAPIDocument []byte

// redocBundle is Redoc's standalone bundle (redoc 2.5.4 from npm, MIT: see
// redoc/LICENSE and redoc/redoc.standalone.js.LICENSE.txt), which renders
// /docs from the document in the browser, with nothing fetched from
// elsewhere. make docs-bundle fetches it again and checks its sha256.
//
//go:embed redoc/redoc.standalone.js
var redocBundle []byte

// OpenAPIDocument returns the embedded OpenAPI 3.1 document that describes
// every endpoint; tests validate responses against it.
func OpenAPIDocument() []byte { return openAPIDocument }

// DocsRoutes serves the document and a page that renders it: Redoc, served
// by the service itself, so the page works offline; without scripts, the
// page shows a plain reference rendered on the server from the same bytes.
func DocsRoutes() ([]Route, error) {
	page, err := renderDocs(openAPIDocument)
	if err != nil {
		return nil, err
	}
	return []Route{
		{Method: http.MethodGet, Path: "/openapi.yaml", Public: true, Name: "openapi", Handler: func(w http.ResponseWriter, _ *http.Request) error {
			w.Header().Set("Content-Type", "application/yaml")
			_, _ = w.Write(openAPIDocument)
			return nil
		}},
		{Method: http.MethodGet, Path: "/docs", Public: true, Name: "docs", Handler: func(w http.ResponseWriter, _ *http.Request) error {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Content-Security-Policy", docsPolicy)
			_, _ = w.Write(page)
			return nil
		}},
		{Method: http.MethodGet, Path: "/docs/redoc.standalone.js", Public: true, Name: "docs.renderer", Handler: func(w http.ResponseWriter, _ *http.Request) error {
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			w.Header().Set("Cache-Control", "public, max-age=86400")
			_, _ = w.Write(redocBundle)
			return nil
		}},
	}, nil
}

// docsPolicy keeps the page to the service: its script and document from
// here, Redoc's styles inline, its search worker from a blob, and its
// badge's logo (an image on Redocly's CDN) not loaded at all.
const docsPolicy = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type docNode = map[string]any

type docOperation struct {
	Method, Path, Summary, Request string
	Public                         bool
	Params                         []docParam
	Responses                      []docResponse
}

type docParam struct{ Name, In, Description string }

type docResponse struct{ Status, Description string }

type docSchema struct{ Name, Body string }

type docPage struct {
	Title, Version, Description string
	Tags                        []docTag
	Schemas                     []docSchema
}

type docTag struct {
	Name       string
	Operations []docOperation
}

var methodOrder = []string{"get", "post", "put", "patch", "delete"}

func renderDocs(raw []byte) ([]byte, error) {
	var doc docNode
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	info, _ := doc["info"].(docNode)
	page := docPage{Title: str(info["title"]), Version: str(info["version"]), Description: str(info["description"])}
	components, _ := doc["components"].(docNode)
	params, _ := components["parameters"].(docNode)
	responses, _ := components["responses"].(docNode)
	byTag := map[string][]docOperation{}
	var tagOrder []string
	paths, _ := doc["paths"].(docNode)
	for _, path := range sortedKeys(paths) {
		item, _ := paths[path].(docNode)
		for _, m := range methodOrder {
			op, ok := item[m].(docNode)
			if !ok {
				continue
			}
			o := docOperation{Method: strings.ToUpper(m), Path: path, Summary: str(op["summary"])}
			if sec, ok := op["security"].([]any); ok && len(sec) == 0 {
				o.Public = true
			}
			for _, p := range list(op["parameters"]) {
				pn, _ := p.(docNode)
				if ref := str(pn["$ref"]); ref != "" {
					pn, _ = params[refName(ref)].(docNode)
				}
				o.Params = append(o.Params, docParam{Name: str(pn["name"]), In: str(pn["in"]), Description: str(pn["description"])})
			}
			if body, ok := op["requestBody"].(docNode); ok {
				content, _ := body["content"].(docNode)
				js, _ := content["application/json"].(docNode)
				schema, _ := js["schema"].(docNode)
				o.Request = refName(str(schema["$ref"]))
			}
			rs, _ := op["responses"].(docNode)
			for _, status := range sortedKeys(rs) {
				r, _ := rs[status].(docNode)
				if ref := str(r["$ref"]); ref != "" {
					r, _ = responses[refName(ref)].(docNode)
				}
				o.Responses = append(o.Responses, docResponse{Status: status, Description: str(r["description"])})
			}
			tag := "other"
			if tags := list(op["tags"]); len(tags) > 0 {
				tag = str(tags[0])
			}
			if _, seen := byTag[tag]; !seen {
				tagOrder = append(tagOrder, tag)
			}
			byTag[tag] = append(byTag[tag], o)
		}
	}
	for _, t := range tagOrder {
		page.Tags = append(page.Tags, docTag{Name: t, Operations: byTag[t]})
	}
	schemas, _ := components["schemas"].(docNode)
	for _, name := range sortedKeys(schemas) {
		b, err := yaml.Marshal(schemas[name])
		if err != nil {
			return nil, err
		}
		page.Schemas = append(page.Schemas, docSchema{Name: name, Body: string(b)})
	}
	var out strings.Builder
	if err := docsTemplate.Execute(&out, page); err != nil {
		return nil, err
	}
	return []byte(out.String()), nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func refName(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

func sortedKeys(m docNode) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var docsTemplate = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} API {{.Version}}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{margin:0}
.plain{font:15px/1.5 system-ui,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#1d2330}
.plain h1{margin-bottom:0}.plain h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em;text-transform:capitalize}
.plain .op{border:1px solid #e3e6ec;border-radius:6px;margin:1em 0;padding:.6em 1em}
.plain .m{display:inline-block;min-width:4.5em;font-weight:700;font-family:monospace}
.plain .GET{color:#0a7}.plain .POST{color:#06c}.plain .PATCH{color:#b70}.plain .DELETE{color:#c22}
.plain code,.plain pre{font-family:ui-monospace,monospace;font-size:13px}.plain pre{background:#f6f8fa;padding:.6em;overflow:auto}
.plain table{border-collapse:collapse}.plain td{padding:.1em .8em .1em 0;vertical-align:top}.plain .pub{color:#777;font-size:12px}
</style></head><body>
<redoc spec-url="/openapi.yaml" path-in-middle-panel="true" required-props-first="true"></redoc>
<noscript><div class="plain">
<h1>{{.Title}}</h1><p>Version {{.Version}} · <a href="/openapi.yaml">openapi.yaml</a></p>
<pre>{{.Description}}</pre>
{{range .Tags}}<h2 id="{{.Name}}">{{.Name}}</h2>
{{range .Operations}}<div class="op"><span class="m {{.Method}}">{{.Method}}</span> <code>{{.Path}}</code>{{if .Public}} <span class="pub">no authentication</span>{{end}}
<p>{{.Summary}}</p>
{{if .Params}}<table>{{range .Params}}<tr><td><code>{{.Name}}</code></td><td>{{.In}}</td><td>{{.Description}}</td></tr>{{end}}</table>{{end}}
{{if .Request}}<p>Body: <a href="#schema-{{.Request}}"><code>{{.Request}}</code></a></p>{{end}}
<table>{{range .Responses}}<tr><td><b>{{.Status}}</b></td><td>{{.Description}}</td></tr>{{end}}</table>
</div>{{end}}{{end}}
<h2>Schemas</h2>
{{range .Schemas}}<h3 id="schema-{{.Name}}">{{.Name}}</h3><pre>{{.Body}}</pre>{{end}}
</div></noscript>
<script src="/docs/redoc.standalone.js"></script>
</body></html>
`))
