// Command receiver is a webhook endpoint for profilesvc. It verifies each
// delivery as Standard Webhooks (standardwebhooks.com) says, with its
// reference library: webhook-signature is the HMAC-SHA256 of
// "webhook-id.webhook-timestamp.body" keyed with the endpoint's secret
// (WEBHOOK_SECRET, used as it is: the library's "raw" secret), and
// webhook-timestamp must be within five minutes of the receiver's clock,
// so a delivery captured and replayed later is refused like a forged one
// (401). It prints each verified event once, as one JSON line on standard
// output, however often the event is delivered, and answers 200.
//
//	WEBHOOK_SECRET=... receiver -addr 127.0.0.1:9090
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"os"
	"sync"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "address to listen on")
	flag.Parse()
	secret := os.Getenv("WEBHOOK_SECRET")
	if len(secret) < 32 {
		log.Fatal("set WEBHOOK_SECRET to the endpoint's secret (32 characters or more)")
	}
	log.Printf("receiving webhooks at http://%s/", *addr)
	log.Fatal(http.ListenAndServe(*addr, newReceiver([]byte(secret), os.Stdout)))
}

type receiver struct {
	verifier *standardwebhooks.Webhook
	out      io.Writer

	mu   sync.Mutex
	seen map[string]bool // ids of the events printed; a real receiver keeps them in its database
}

func newReceiver(secret []byte, out io.Writer) *receiver {
	// NewWebhookRaw takes the secret as the service keys it; NewWebhook
	// would read it as base64.
	v, err := standardwebhooks.NewWebhookRaw(secret)
	if err != nil {
		log.Fatal(err)
	}
	return &receiver{verifier: v, out: out, seen: map[string]bool{}}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "webhook deliveries are POSTed here", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "the body could not be read", http.StatusBadRequest)
		return
	}
	// The signature covers the bytes as received: check it before parsing.
	if err := rc.verifier.Verify(body, r.Header); err != nil {
		log.Printf("refused a delivery: %v", err)
		http.Error(w, "bad signature or timestamp", http.StatusUnauthorized)
		return
	}
	var event struct {
		ID string `json:"id"`
	}
	var line bytes.Buffer
	if err := json.Unmarshal(body, &event); err != nil || event.ID == "" || json.Compact(&line, body) != nil {
		http.Error(w, "not an event", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.seen[event.ID] {
		log.Printf("%s delivered again (attempt %s): already handled", event.ID, r.Header.Get("X-Service-Delivery-Attempt"))
		return
	}
	line.WriteByte('\n')
	if _, err := rc.out.Write(line.Bytes()); err != nil {
		http.Error(w, "the event could not be kept", http.StatusInternalServerError)
		return
	}
	rc.seen[event.ID] = true
}
