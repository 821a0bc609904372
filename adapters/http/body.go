package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/profilesvc/profilesvc/domain"
)

// maxBodyBytes bounds every request body (API.md: over 1 MiB is 413).
const maxBodyBytes = 1 << 20

// readBody reads the whole request body for decodeJSON and Idempotent, so
// both refuse the same bodies with the same errors: 413 over maxBodyBytes,
// 400 when the body cannot be read. The time a client may take to send it
// is bounded by the server's read timeout (Timeouts.Read), which covers the
// whole request and every path, also those that never read the body; a
// stalled body fails here with the connection's deadline, and that
// deadline, left in place, also ends net/http's attempt to drain the rest
// of the body before it answers and closes the connection.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return readBodyUpTo(w, r, maxBodyBytes)
}

// readBodyUpTo is readBody with another limit, for the few endpoints whose
// bodies are larger by nature.
func readBodyUpTo(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, tooLarge(nil, limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(err, limit)
		}
		return nil, &domain.Error{Kind: domain.KindBadRequest, Message: "request body could not be read", Err: err}
	}
	return body, nil
}

func tooLarge(err error, limit int64) error {
	return &transportError{
		kind:    kindPayloadTooLarge,
		message: fmt.Sprintf("request body must not exceed %d bytes", limit),
		err:     err,
	}
}
