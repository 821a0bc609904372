//go:build linux

package chromium

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/domain/profile"
)

func TestClientHintsFollowTheUserAgent(t *testing.T) {
	const (
		win  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
		edge = win + " Edg/131.0.0.0"
		mac  = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
		and  = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"
		lin  = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
		// What Chrome 131 and 120 send (Sec-CH-UA): the made-up brand and
		// the order change with the major version.
		brands131 = "Google Chrome/131,Chromium/131,Not_A Brand/24"
		full131   = "Google Chrome/131.0.6778.86,Chromium/131.0.6778.86,Not_A Brand/24.0.0.0"
	)
	for _, c := range []struct {
		ua, platform, version              string
		wantPlatform, wantBrands, wantFull string
		wantMobile                         bool
	}{
		{win, "Win32", "131.0.6778.86", "Windows", brands131, full131, false},
		{edge, "Win32", "131.0.6778.86", "Windows", "Microsoft Edge/131,Chromium/131,Not_A Brand/24", "Microsoft Edge/131.0.6778.86,Chromium/131.0.6778.86,Not_A Brand/24.0.0.0", false},
		{mac, "MacIntel", "131.0.6778.86", "macOS", brands131, full131, false},
		{and, "Linux armv81", "131.0.6778.86", "Android", brands131, full131, true},
		{lin, "Linux x86_64", "131.0.6778.86", "Linux", brands131, full131, false},
		{strings.ReplaceAll(win, "131", "120"), "Win32", "120.0.6099.109", "Windows", "Not_A Brand/8,Chromium/120,Google Chrome/120", "Not_A Brand/8.0.0.0,Chromium/120.0.6099.109,Google Chrome/120.0.6099.109", false},
		// An engine of another major version than the user agent's: the
		// user agent's own version stands.
		{win, "Win32", "", "Windows", brands131, "Google Chrome/131.0.0.0,Chromium/131.0.0.0,Not_A Brand/24.0.0.0", false},
	} {
		md := userAgentMetadata(c.ua, c.platform, c.version, profile.ClientHints{})
		if md == nil {
			t.Fatalf("no client hints for %s", c.ua)
		}
		var brands, full []string
		for _, b := range md.Brands {
			brands = append(brands, b.Brand+"/"+b.Version)
		}
		for _, b := range md.FullVersionList {
			full = append(full, b.Brand+"/"+b.Version)
		}
		if md.Platform != c.wantPlatform || strings.Join(brands, ",") != c.wantBrands || strings.Join(full, ",") != c.wantFull || md.Mobile != c.wantMobile {
			t.Errorf("%s on %s: platform %q, brands %v, full %v, mobile %v", c.ua, c.platform, md.Platform, brands, full, md.Mobile)
		}
	}
	if md := userAgentMetadata("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "Linux x86_64", "131.0.6778.86", profile.ClientHints{}); md != nil {
		t.Errorf("a Firefox user agent got Chrome's client hints: %+v", md)
	}
	if got := userAgentMetadata(mac, "MacIntel", "", profile.ClientHints{}).PlatformVersion; got != "10.15.7" {
		t.Errorf("macOS platform version %q, want 10.15.7", got)
	}
}

func TestTheUserAgentTakesTheEnginesVersion(t *testing.T) {
	for _, c := range []struct{ ua, version, want string }{
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "156.0.8078.108",
			"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.86 Safari/537.36 Edg/131.0.2903.70", "156.0.8078.108",
			"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36 Edg/156.0.0.0"},
		{"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "156.0.8078.108", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"},
		{"Mozilla/5.0 Chrome/131.0.0.0", "", "Mozilla/5.0 Chrome/131.0.0.0"},
	} {
		if got := withEngineVersion(c.ua, c.version); got != c.want {
			t.Errorf("withEngineVersion(%q, %q) = %q, want %q", c.ua, c.version, got, c.want)
		}
	}
}

func TestLanguageSettings(t *testing.T) {
	if got := acceptLanguage("de-DE"); got != "de-DE,de" {
		t.Errorf("acceptLanguage(de-DE) = %q", got)
	}
	if got := acceptLanguage("fr"); got != "fr" {
		t.Errorf("acceptLanguage(fr) = %q", got)
	}
	if got := posixLocale("pt-BR"); got != "pt_BR.UTF-8" {
		t.Errorf("posixLocale(pt-BR) = %q", got)
	}
	fp := profile.Fingerprint{UserAgent: "UA", Platform: "Win32", Locale: "ja-JP", Timezone: "Asia/Tokyo", Screen: profile.Screen{Width: 393, Height: 873}}
	if env := browserEnv(fp); len(env) != 2 || env["TZ"] != "Asia/Tokyo" || env["LANG"] != "ja_JP.UTF-8" {
		t.Errorf("the browser's environment is %v, want only TZ=Asia/Tokyo and LANG=ja_JP.UTF-8", env)
	}
	args := strings.Join(browserArgs(true, fp), " ")
	for _, want := range []string{"--user-data-dir=/profile", "--headless=new", "--disable-blink-features=AutomationControlled", "--lang=ja-JP", "--window-size=393,873", "--user-agent=UA", "--remote-debugging-pipe", "--proxy-bypass-list=<-loopback>"} {
		if !strings.Contains(args, want) {
			t.Errorf("the browser's flags lack %s: %s", want, args)
		}
	}
}

// The made-up brand of the client hints is the engine's own: an engine
// with no overrides, asked in a page, names the same one in the same place
// before or after "Chromium".
func TestTheGreasedBrandIsTheEngines(t *testing.T) {
	path := chromiumPath(t)
	version, err := engineVersion(path)
	if err != nil {
		t.Fatal(err)
	}
	// A file of its own: client hints are for secure contexts, which a
	// file: page is and a data: page is not.
	page := filepath.Join(t.TempDir(), "brands.html")
	if err := os.WriteFile(page, []byte(`<script>document.write(JSON.stringify(navigator.userAgentData.brands))</script>`), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--headless=new", "--user-data-dir=" + t.TempDir(), "--dump-dom", "file://" + page}
	if os.Geteuid() == 0 {
		args = append([]string{"--no-sandbox"}, args...)
	}
	out, err := exec.CommandContext(testContext(t), path, args...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	doc := string(out)
	start, end := strings.Index(doc, "[{"), strings.LastIndex(doc, "}]")
	if start < 0 || end < start {
		t.Fatalf("no brands in the page: %s", doc)
	}
	var seen []struct{ Brand, Version string }
	if err := json.Unmarshal([]byte(doc[start:end+2]), &seen); err != nil {
		t.Fatalf("brands %s: %v", doc[start:end+2], err)
	}
	major, _ := strconv.Atoi(majorOf(version))
	brand, greaseVersion, order := greasedBrand(major)
	greaseAt, chromiumAt := -1, -1
	for i, b := range seen {
		switch {
		case b.Brand == "Chromium":
			chromiumAt = i
		case strings.HasPrefix(b.Brand, "Not"):
			greaseAt = i
			if b.Brand != brand || b.Version != greaseVersion {
				t.Errorf("the engine's made-up brand is %s/%s, we send %s/%s", b.Brand, b.Version, brand, greaseVersion)
			}
		}
	}
	if greaseAt < 0 || chromiumAt < 0 {
		t.Fatalf("the engine's brands %+v lack the made-up brand or Chromium", seen)
	}
	if (greaseAt < chromiumAt) != (order[0] < order[1]) {
		t.Errorf("the engine puts its made-up brand at %d and Chromium at %d; we send them in the order %v", greaseAt, chromiumAt, order)
	}
}
