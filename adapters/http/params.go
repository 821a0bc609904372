package httpapi

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/domain"
)

// checkParams refuses, before any handler runs, a path variable or query
// parameter that holds a NUL or is not valid UTF-8 once percent-decoded:
// storage refuses both (PostgreSQL with an error, which was a 500) or
// stores something else than was sent. The answer is 400 naming the
// parameter.
func checkParams(next http.Handler) http.Handler {
	return HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		for name, v := range mux.Vars(r) {
			if err := checkParam(name, v); err != nil {
				return err
			}
		}
		for name, vs := range r.URL.Query() {
			if err := checkParam(name, name); err != nil {
				return err
			}
			for _, v := range vs {
				if err := checkParam(name, v); err != nil {
					return err
				}
			}
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

func checkParam(name, v string) error {
	var issue string
	switch {
	case strings.IndexByte(v, 0) >= 0:
		issue = "must not contain NUL characters"
	case !utf8.ValidString(v):
		issue = "must be valid UTF-8"
	default:
		return nil
	}
	field := joinField("", name)
	return &domain.Error{Kind: domain.KindBadRequest, Message: "parameter " + field + " " + issue, Fields: []domain.FieldIssue{{Field: field, Issue: issue}}}
}
