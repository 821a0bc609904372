package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/profilesvc/profilesvc/application/idempotency"
)

// replayedHeaders are the response headers kept with an idempotent
// response; the request id is the new request's own.
var replayedHeaders = []string{"Content-Type", "ETag", "Location", "Retry-After"}

// Idempotent applies API.md's Idempotency-Key to POST requests: it runs
// after authentication, since a key belongs to one user in one team, and so
// does not apply to the public /auth endpoints. The same key and body get
// the first response again (marked with the header Idempotent-Replayed:
// true) without running the handler. The request carries its claim of the
// key to the units of work it runs, which keep the claim with the effect;
// the response is kept on the claim afterwards, unless it carries
// credentials (Cache-Control: no-store) or is too large.
func Idempotent(svc *idempotency.Service) Middleware {
	return func(next http.Handler) http.Handler {
		return HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			key := r.Header.Get("Idempotency-Key")
			if r.Method != http.MethodPost || key == "" {
				next.ServeHTTP(w, r)
				return nil
			}
			body, err := readBody(w, r)
			if err != nil {
				return err
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			ctx := r.Context()
			begun, err := svc.Begin(ctx, actorFrom(ctx), idempotency.Request{Key: key, Method: r.Method, Path: r.URL.Path, Body: body})
			if err != nil {
				return err
			}
			if begun.Replay != nil {
				markReplayed(ctx)
				replay(w, begun.Replay.Status, begun.Replay.Headers, begun.Replay.Body)
				return nil
			}
			buf := &bufferedResponse{header: http.Header{}}
			next.ServeHTTP(buf, r.WithContext(idempotency.WithClaim(ctx, begun.Claim)))
			status := buf.statusCode()
			kept := map[string]string{}
			for _, k := range replayedHeaders {
				if v := buf.header.Get(k); v != "" {
					kept[k] = v
				}
			}
			first, err := svc.Finish(ctx, begun.Claim, idempotency.Response{
				Status: status, Headers: kept, Body: buf.body.Bytes(),
				Credentials: strings.Contains(buf.header.Get("Cache-Control"), "no-store"),
			})
			if err != nil {
				return err
			}
			if first != nil {
				markReplayed(ctx)
				replay(w, first.Status, first.Headers, first.Body)
				return nil
			}
			for k, vs := range buf.header {
				w.Header()[k] = vs
			}
			w.WriteHeader(status)
			_, _ = w.Write(buf.body.Bytes())
			return nil
		})
	}
}

// replay answers with a kept response.
func replay(w http.ResponseWriter, status int, headers map[string]string, body []byte) {
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Idempotent-Replayed", "true")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// bufferedResponse holds a handler's response until it has been kept for
// replays.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

func (b *bufferedResponse) statusCode() int {
	if b.status == 0 {
		return http.StatusOK
	}
	return b.status
}

// markReplayed tells the metrics the answer is a kept one.
func markReplayed(ctx context.Context) {
	if info := infoFrom(ctx); info != nil {
		info.replayed = true
	}
}
