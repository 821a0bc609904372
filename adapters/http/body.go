package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/profilesvc/profilesvc/domain"
)

// maxBodyBytes bounds every request body (API.md: over 1 MiB is 413).
const maxBodyBytes = 1 << 20

// bodyReadTimeout bounds reading one request body.
const bodyReadTimeout = 30 * time.Second

// readBody reads the whole request body for decodeJSON and Idempotent, so
// both refuse the same bodies with the same errors.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return bodyReader{timeout: bodyReadTimeout}.read(w, r)
}

// bodyReader reads a request body within a size limit and a deadline. The
// deadline is a field, not a constant, so that tests can give a stalled
// body a short one; the package itself reads through readBody.
type bodyReader struct {
	// timeout bounds the whole read. The server has no ReadTimeout (see
	// NewServer), so without it a client that sends part of a body and then
	// nothing, or trickles it, would hold the handler open.
	timeout time.Duration
}

// read returns the body, or an error for the mapper: 413 over maxBodyBytes,
// 400 when the body cannot be read, the deadline passing included.
func (b bodyReader) read(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > maxBodyBytes {
		return nil, tooLarge(nil)
	}
	// Writers without a connection (recorders in tests, the idempotency
	// buffer in front of a body already read) do not support deadlines.
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(b.timeout)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(err)
		}
		// The deadline stays: before it answers, net/http tries to drain
		// what is left of the body, and on a stalled connection only a
		// passed deadline ends that wait and closes the connection.
		return nil, &domain.Error{Kind: domain.KindBadRequest, Message: "request body could not be read", Err: err}
	}
	if deadline {
		// net/http reads on from the connection while the handler runs, to
		// notice a client that goes away. It clears the deadline itself
		// when a body ends, but for a request without a body that read
		// began before the handler, and the deadline set above would fail
		// it and cancel the request's context in the middle of the work.
		_ = rc.SetReadDeadline(time.Time{})
	}
	return body, nil
}

func tooLarge(err error) error {
	return &transportError{
		kind:    kindPayloadTooLarge,
		message: fmt.Sprintf("request body must not exceed %d bytes", maxBodyBytes),
		err:     err,
	}
}
