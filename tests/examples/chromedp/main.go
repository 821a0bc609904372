// Command chromedp drives the browser of a profilesvc session from Go. It
// connects to the session's cdpUrl, opens a tab on a page and prints, as
// one JSON line, what the page sees: the profile's fingerprint and the
// cookies and localStorage that earlier visits left. It then leaves a
// cookie and a localStorage entry of its own and disconnects; the browser
// runs on until the session is released, which stores what it holds.
//
//	go run ./tests/examples/chromedp <cdpUrl> <pageUrl>
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
)

// seen is what the page sees of the profile.
type seen struct {
	Client    string `json:"client"`
	Title     string `json:"title"`
	UserAgent string `json:"userAgent"`
	Language  string `json:"language"`
	Timezone  string `json:"timezone"`
	Cookies   string `json:"cookies"`
	Visits    string `json:"visits"`
}

const look = `({
	client: 'chromedp',
	title: document.title,
	userAgent: navigator.userAgent,
	language: navigator.language,
	timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
	cookies: document.cookie,
	visits: localStorage.getItem('visits') ?? '',
})`

const leave = `(() => {
	document.cookie = 'chromedp=visited; path=/; max-age=31536000';
	const visits = localStorage.getItem('visits');
	localStorage.setItem('visits', visits ? visits + ',chromedp' : 'chromedp');
})()`

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: chromedp <cdpUrl> <pageUrl>")
		os.Exit(2)
	}
	if err := drive(os.Args[1], os.Args[2]); err != nil {
		log.Fatal(err)
	}
}

func drive(cdpURL, pageURL string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// cdpUrl is the browser's WebSocket itself: NoModifyURL keeps chromedp
	// from asking /json/version for another one.
	allocCtx, cancelAlloc := remote.NewAllocator(ctx, cdpURL, remote.NoModifyURL)
	defer cancelAlloc() // disconnects; the browser runs on
	// A new tab in the profile's own context; cancelling closes the tab.
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()

	if err := chromedp.Do(tabCtx, chromedp.Navigate(pageURL)); err != nil {
		return err
	}
	page, err := chromedp.Run(tabCtx, chromedp.Evaluate[seen](look))
	if err != nil {
		return err
	}
	if err := json.NewEncoder(os.Stdout).Encode(page); err != nil {
		return err
	}
	return chromedp.Do(tabCtx, chromedp.Evaluate[chromedp.Void](leave))
}
