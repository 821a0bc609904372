package apptest

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// Logs keeps every record written to its Logger, as a line of the level, the
// message and the attributes: those given to With first, then the record's
// own ("ERROR stop browser profile_id=prf_001 error=gone").
type Logs struct {
	mu    sync.Mutex
	lines []string
	heads []string // level and message of each line
}

// Logger returns a logger that writes to l.
func (l *Logs) Logger() *slog.Logger { return slog.New(logHandler{logs: l}) }

// Lines returns the records written so far, oldest first.
func (l *Logs) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// Has reports whether a record of that level and message was written,
// whatever its attributes: Has("WARN api key cache read failed").
func (l *Logs) Has(levelAndMessage string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.heads, levelAndMessage)
}

// logHandler writes the records of one logger, and those of the loggers
// With derives from it, to logs.
type logHandler struct {
	logs  *Logs
	attrs []slog.Attr
}

func (h logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h logHandler) Handle(_ context.Context, r slog.Record) error {
	head := r.Level.String() + " " + r.Message
	var b strings.Builder
	b.WriteString(head)
	for _, a := range h.attrs {
		b.WriteString(" " + a.String())
	}
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.logs.mu.Lock()
	defer h.logs.mu.Unlock()
	h.logs.lines = append(h.logs.lines, b.String())
	h.logs.heads = append(h.logs.heads, head)
	return nil
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{logs: h.logs, attrs: append(slices.Clone(h.attrs), as...)}
}

// WithGroup keeps to the same handler: the lines do not show groups.
func (h logHandler) WithGroup(string) slog.Handler { return h }
