package e2e

import (
	"bytes"
	"context"
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
)

// /docs renders the API reference in headless Chromium from the service
// alone: every operation of /openapi.yaml has its section in the DOM, the
// summaries show, and the page fetches nothing from another host. The
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
	var doc struct {
		Paths map[string]map[string]struct {
			Summary string `yaml:"summary"`
		} `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	operations := 0
	var summaries []string
	for _, ops := range doc.Paths {
		for method, op := range ops {
			switch method {
			case "get", "post", "put", "patch", "delete":
				operations++
				if op.Summary != "" {
					summaries = append(summaries, op.Summary)
				}
			}
		}
	}
	if operations < 50 || len(summaries) == 0 {
		t.Fatalf("the document has %d operations, %d with a summary", operations, len(summaries))
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
	sections := 0
	for deadline := time.Now().Add(30 * time.Second); sections < operations && time.Now().Before(deadline); {
		n, err := chromedp.Run(tabCtx, chromedp.Evaluate[int](`document.querySelectorAll('[data-section-id^="operation/"]').length`))
		if err != nil {
			t.Fatal(err)
		}
		if sections = n; sections < operations {
			time.Sleep(100 * time.Millisecond)
		}
	}
	text, err := chromedp.Run(tabCtx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(tabCtx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if sections < operations {
		t.Fatalf("%d operation sections rendered, the document has %d operations", sections, operations)
	}
	for _, s := range summaries {
		if !strings.Contains(text, s) {
			t.Errorf("the page does not show %q", s)
		}
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
