//go:build linux

package chromium

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// The relay's second line. The sandbox already keeps a browser from the
// host's files and network whatever a client asks; these checks refuse,
// before they reach the browser, the commands that name host paths or
// networks, or that would open a channel around the checks (non-flat
// sessions, a protocol binding for pages). A refused command is answered
// with a CDP error naming the rule; the connection goes on.

// refusedMethods are never passed on, with why.
var refusedMethods = map[string]string{
	"DOM.setFileInputFiles":         "it names files of the host",
	"DOM.getFileInfo":               "it reveals paths of the host",
	"Page.handleFileChooser":        "it names files of the host",
	"Network.loadNetworkResource":   "it loads resources outside the page",
	"Target.exposeDevToolsProtocol": "it gives a page the protocol",
	"Target.sendMessageToTarget":    "only flat sessions are relayed",
	"Target.setRemoteLocations":     "the browser has no other DevTools locations",
	"Browser.executeBrowserCommand": "it runs commands of the browser's own UI",
}

// refusedDomains are protocol domains refused whole.
var refusedDomains = map[string]string{
	"Extensions.": "extensions are not allowed",
	"PWA.":        "it installs or launches applications",
}

// allowedSchemes are the URL schemes a client may navigate to or open:
// the web, and the pages a browser makes of its own. file:, chrome:,
// devtools:, view-source: and the like stay out.
var allowedSchemes = map[string]bool{"http": true, "https": true, "about": true, "data": true, "blob": true}

// refuse is the error of a refused command.
func refuse(method, why string) error {
	return fmt.Errorf("profilesvc: %s is not allowed: %s", method, why)
}

// checkCommand refuses, or rewrites, a client's command before it reaches
// the browser; it returns the params to send.
func checkCommand(method string, params json.RawMessage) (json.RawMessage, error) {
	if why, ok := refusedMethods[method]; ok {
		return nil, refuse(method, why)
	}
	// Whole domains that install or launch code besides the pages.
	for prefix, why := range refusedDomains {
		if strings.HasPrefix(method, prefix) {
			return nil, refuse(method, why)
		}
	}
	switch method {
	case "Page.navigate", "Target.createTarget", "Fetch.continueRequest", "Network.continueInterceptedRequest":
		var p struct {
			URL *string `json:"url"`
		}
		if err := json.Unmarshal(orEmpty(params), &p); err != nil {
			return nil, refuse(method, "its params are not a JSON object")
		}
		if p.URL != nil {
			if err := checkURL(*p.URL); err != nil {
				return nil, refuse(method, err.Error())
			}
		}
	case "Target.createBrowserContext":
		var p map[string]json.RawMessage
		if err := json.Unmarshal(orEmpty(params), &p); err != nil {
			return nil, refuse(method, "its params are not a JSON object")
		}
		for _, k := range []string{"proxyServer", "proxyBypassList", "originsWithUniversalNetworkAccess"} {
			if _, ok := p[k]; ok {
				return nil, refuse(method, k+" is set: every context goes through the profile's proxy")
			}
		}
	case "Target.attachToTarget", "Target.setAutoAttach":
		var p struct {
			Flatten *bool `json:"flatten"`
		}
		if err := json.Unmarshal(orEmpty(params), &p); err != nil {
			return nil, refuse(method, "its params are not a JSON object")
		}
		if p.Flatten == nil || !*p.Flatten {
			return nil, refuse(method, "only flat sessions are relayed (flatten: true)")
		}
	case "Input.dispatchDragEvent":
		var p struct {
			Data struct {
				Files []string `json:"files"`
			} `json:"data"`
		}
		if err := json.Unmarshal(orEmpty(params), &p); err != nil {
			return nil, refuse(method, "its params are not a JSON object")
		}
		if len(p.Data.Files) > 0 {
			return nil, refuse(method, "data.files names files of the host")
		}
	case "Browser.setDownloadBehavior", "Page.setDownloadBehavior":
		// Clients (Playwright among them) name a folder of their own
		// machine; every download goes to the sandbox's own instead.
		var p map[string]json.RawMessage
		if err := json.Unmarshal(orEmpty(params), &p); err != nil {
			return nil, refuse(method, "its params are not a JSON object")
		}
		if _, ok := p["downloadPath"]; ok {
			p["downloadPath"], _ = json.Marshal(sandboxDownloads)
			return json.Marshal(p)
		}
	}
	return params, nil
}

func orEmpty(params json.RawMessage) json.RawMessage {
	if len(params) == 0 {
		return json.RawMessage("{}")
	}
	return params
}

// checkURL lets a URL through when its scheme is one of allowedSchemes; an
// empty URL is a blank page.
func checkURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return fmt.Errorf("url %q does not parse", raw)
	}
	if !allowedSchemes[strings.ToLower(u.Scheme)] {
		return fmt.Errorf("url scheme %q is not allowed: only http, https, about, data and blob", u.Scheme)
	}
	return nil
}
