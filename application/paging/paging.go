// Package paging owns the list convention every use case shares: pages
// newest first, the cursor being the id of the last item of the previous
// page, so that items created while a client pages neither shift nor
// repeat the rest.
package paging

import (
	"strconv"
	"strings"

	"github.com/profilesvc/profilesvc/domain"
)

// Page sizes: a list answers DefaultLimit items unless the client asks for
// 1 to MaxLimit.
const (
	DefaultLimit = 50
	MaxLimit     = 100
)

// ParseLimit reads a client's page size: "" is DefaultLimit; anything but an
// integer from 1 to MaxLimit is a bad request.
func ParseLimit(raw string) (int, error) {
	if raw == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, domain.BadRequest("limit must be an integer from 1 to " + strconv.Itoa(MaxLimit))
	}
	return n, nil
}

// Page is one page of a list; NextCursor is "" on the last.
type Page[T any] struct {
	Items      []T
	NextCursor string
	Limit      int
}

// maxCursorLength bounds a cursor: an id is a prefix and a 26-character
// ULID.
const maxCursorLength = 64

// CheckCursor refuses a cursor that is not an id with the resource's
// prefix ("prf_", "mem_", ...), before it reaches a query: after the
// prefix, only ASCII letters, digits and underscores, as in every id the
// service issues, so nothing a store would refuse (a NUL, invalid UTF-8)
// or read as something else gets that far.
func CheckCursor(cursor, prefix string) error {
	if cursor == "" {
		return nil
	}
	rest, ok := strings.CutPrefix(cursor, prefix)
	if !ok || rest == "" || len(cursor) > maxCursorLength || strings.ContainsFunc(rest, notIDChar) {
		return domain.BadRequest("cursor is not one this service issued")
	}
	return nil
}

func notIDChar(r rune) bool {
	return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_')
}

// Cut makes the page of items read with limit+1: the extra item, when
// there, only says that another page follows.
func Cut[T any](items []T, limit int, id func(T) string) Page[T] {
	p := Page[T]{Items: items, Limit: limit}
	if len(items) > limit {
		p.Items = items[:limit]
		p.NextCursor = id(p.Items[limit-1])
	}
	return p
}
