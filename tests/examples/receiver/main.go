// Command receiver is a webhook endpoint for profilesvc. It checks each
// delivery's X-Service-Signature, the lowercase hex HMAC-SHA256 of the raw
// body keyed with the endpoint's secret (WEBHOOK_SECRET), and answers 401
// when it differs. It prints each verified event once, as one JSON line on
// standard output, however often the event is delivered, and answers 200.
//
//	WEBHOOK_SECRET=... receiver -addr 127.0.0.1:9090
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "address to listen on")
	flag.Parse()
	secret := os.Getenv("WEBHOOK_SECRET")
	if len(secret) < 32 {
		log.Fatal("set WEBHOOK_SECRET to the endpoint's secret (32 characters or more)")
	}
	log.Printf("receiving webhooks at http://%s/", *addr)
	log.Fatal(http.ListenAndServe(*addr, &receiver{secret: []byte(secret), out: os.Stdout, seen: map[string]bool{}}))
}

type receiver struct {
	secret []byte
	out    io.Writer

	mu   sync.Mutex
	seen map[string]bool // ids of the events printed; a real receiver keeps them in its database
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
	if !signedWith(rc.secret, body, r.Header.Get("X-Service-Signature")) {
		log.Print("refused a delivery whose signature does not match")
		http.Error(w, "bad signature", http.StatusUnauthorized)
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

// signedWith reports whether signature is the lowercase hex HMAC-SHA256 of
// body keyed with secret, comparing in constant time.
func signedWith(secret, body []byte, signature string) bool {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	want := hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(want), []byte(signature))
}
