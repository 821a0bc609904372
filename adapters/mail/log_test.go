package mail_test

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/profilesvc/profilesvc/adapters/mail"
	"github.com/profilesvc/profilesvc/ports"
)

func TestLogWritesTheWholeMessageAsOneLine(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	m := ports.Mail{To: "ann@example.com", Subject: "Reset your password", Text: "Open https://example.com/reset?token=abc\nwithin an hour."}
	if err := mail.NewLog(zap.New(core)).Send(context.Background(), m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	entries := logs.AllUntimed()
	if len(entries) != 1 {
		t.Fatalf("log lines = %d, want 1", len(entries))
	}
	e := entries[0]
	if e.Level != zapcore.InfoLevel || e.Message != "mail (log transport)" {
		t.Fatalf("entry = %s %q, want info %q", e.Level, e.Message, "mail (log transport)")
	}
	fields := e.ContextMap()
	for k, want := range map[string]string{"to": m.To, "subject": m.Subject, "text": m.Text} {
		if fields[k] != want {
			t.Errorf("field %s = %v, want %q", k, fields[k], want)
		}
	}
}
