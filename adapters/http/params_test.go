package httpapi

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/gorilla/mux"
)

func TestCheckParams(t *testing.T) {
	t.Parallel()
	reached := false
	h := checkParams(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	cases := map[string]struct {
		vars  map[string]string
		query string
		field string
	}{
		"NUL in a path id":       {map[string]string{"id": "prf_\x00"}, "", "id"},
		"invalid UTF-8 in an id": {map[string]string{"deliveryId": "dlv_\xc3\x28"}, "", "deliveryId"},
		"NUL in a query value":   {nil, "q=" + url.QueryEscape("a\x00"), "q"},
		"bad UTF-8 in a value":   {nil, "cursor=prf_%ff", "cursor"},
		"NUL in a query name":    {nil, url.QueryEscape("q\x00") + "=a", `q\x00`},
		"one of many values":     {nil, "tag=a&tag=b%00", "tag"},
	}
	for name, c := range cases {
		reached = false
		r := httptest.NewRequest(http.MethodGet, "/x?"+c.query, nil)
		r = mux.SetURLVars(r, c.vars)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		env := expectError(t, w, http.StatusBadRequest, "bad_request")
		if reached || len(env.Error.Details) != 1 || env.Error.Details[0].Field != c.field {
			t.Errorf("%s: reached %v, details %+v, want field %q", name, reached, env.Error.Details, c.field)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/x?q="+url.QueryEscape("ünïcode ✓")+"&cursor=prf_1", nil)
	r = mux.SetURLVars(r, map[string]string{"id": "prf_é"})
	h.ServeHTTP(httptest.NewRecorder(), r)
	if !reached {
		t.Fatal("valid parameters were refused")
	}
}
