//go:build unix

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"gopkg.in/yaml.v3"

	"github.com/profilesvc/profilesvc/tests/poll"
)

// /docs renders the API reference in headless Chromium from the service
// alone: every operation of /openapi.yaml has its section in the DOM, the
// summaries show, every request body has its samples, the outgoing
// webhook event has its section with each event's example offered, and
// the page fetches nothing from another host. The
// screenshot is kept in DOCS_SCREENSHOT when set (CI keeps it).
func TestDocsPageRendersEveryOperation(t *testing.T) {
	chromium, _ := browserTools(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	base := "http://" + addr
	startProcess(t, dir, minimalEnv("HTTP_ADDR="+addr, "DATA_DIR="+filepath.Join(dir, "data"), "LOG_LEVEL=warn", "BROWSER_RUNTIME=none"), addr)

	// The operations, read from the document itself.
	resp, err := http.Get(base + "/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	type example struct {
		Summary string `yaml:"summary"`
	}
	type operation struct {
		Summary     string `yaml:"summary"`
		RequestBody struct {
			Content map[string]any `yaml:"content"`
		} `yaml:"requestBody"`
	}
	var doc struct {
		Paths    map[string]map[string]operation `yaml:"paths"`
		Webhooks struct {
			Event struct {
				Post struct {
					RequestBody struct {
						Content struct {
							JSON struct {
								Examples map[string]example `yaml:"examples"`
							} `yaml:"application/json"`
						} `yaml:"content"`
					} `yaml:"requestBody"`
				} `yaml:"post"`
			} `yaml:"event"`
		} `yaml:"webhooks"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	operations, withBody := 0, 1 // the webhook event's body
	var summaries []string
	for _, ops := range doc.Paths {
		for method, op := range ops {
			switch method {
			case "get", "post", "put", "patch", "delete":
				operations++
				if op.Summary != "" {
					summaries = append(summaries, op.Summary)
				}
				// A body of bytes alone (browser data) has no sample to show.
				if len(op.RequestBody.Content) > 0 && op.RequestBody.Content["application/gzip"] == nil {
					withBody++
				}
			}
		}
	}
	if operations < 50 || len(summaries) == 0 {
		t.Fatalf("the document has %d operations, %d with a summary", operations, len(summaries))
	}
	events := doc.Webhooks.Event.Post.RequestBody.Content.JSON.Examples
	if len(events) < 10 {
		t.Fatalf("the document shows %d webhook event examples, want one of each of the 10 types", len(events))
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(dir, "chromium")), chromedp.WindowSize(1280, 900),
	)
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	// Every request the page makes, and those its Content-Security-Policy
	// stopped before they left.
	var mu sync.Mutex
	requested := map[network.RequestID]string{}
	blocked := map[network.RequestID]bool{}
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithListener(func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			requested[e.RequestID] = e.Request.URL
		case *network.EventLoadingFailed:
			if e.BlockedReason == network.BlockedReasonCsp {
				blocked[e.RequestID] = true
			}
		}
	}))
	defer cancelTab()

	if err := chromedp.Do(tabCtx, chromedp.Navigate(base+"/docs"),
		chromedp.WaitVisible(chromedp.CSS(`[data-section-id^="operation/"]`))); err != nil {
		t.Fatal(err)
	}
	// Redoc renders the first sections, then the rest: poll their count.
	poll.Within(t, 30*time.Second, fmt.Sprintf("Redoc to render the %d operations", operations), func() bool {
		n, err := chromedp.Run(tabCtx, chromedp.Evaluate[int](`document.querySelectorAll('[data-section-id^="operation/"]').length`))
		if err != nil {
			t.Fatal(err)
		}
		return n >= operations
	})
	text, err := chromedp.Run(tabCtx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(tabCtx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range summaries {
		if !strings.Contains(text, s) {
			t.Errorf("the page does not show %q", s)
		}
	}
	// Every request body has its samples, the webhook event's included, and
	// the event's examples are offered by their summaries.
	if n := strings.Count(text, "Request samples"); n < withBody {
		t.Errorf("%d request samples shown, the document has %d request bodies", n, withBody)
	}
	if !strings.Contains(text, "Response samples") {
		t.Error("the page shows no response samples")
	}
	for name, ex := range events {
		if !strings.Contains(text, ex.Summary) {
			t.Errorf("the page does not offer the webhook event example %s (%q)", name, ex.Summary)
		}
	}
	webhook, err := chromedp.Run(tabCtx, chromedp.Evaluate[int](`document.querySelectorAll('[data-section-id$="/operation/receiveWebhookEvent"]').length`))
	if err != nil || webhook == 0 {
		t.Errorf("the webhook event has no section on the page (%v)", err)
	}
	mu.Lock()
	var fetched []string
	for id, raw := range requested {
		fetched = append(fetched, raw)
		if u, err := url.Parse(raw); err != nil || (u.Scheme != "data" && u.Scheme != "blob" && u.Host != addr && !blocked[id]) {
			t.Errorf("the page fetched %s from elsewhere", raw)
		}
	}
	// The listener saw the page, its script and the document.
	for _, want := range []string{base + "/docs", base + "/docs/redoc.standalone.js", base + "/openapi.yaml"} {
		if !slices.Contains(fetched, want) {
			t.Errorf("no request for %s among %v", want, fetched)
		}
	}
	mu.Unlock()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 600 {
		t.Fatalf("screenshot of %v, want the 1280-wide window", b)
	}
	if out := os.Getenv("DOCS_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
