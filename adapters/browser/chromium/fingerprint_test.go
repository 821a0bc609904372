package chromium

import (
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/domain/profile"
)

func TestClientHintsFollowTheUserAgent(t *testing.T) {
	const (
		win  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
		edge = win + " Edg/131.0.2903.70"
		mac  = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
		and  = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"
		lin  = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	)
	for _, c := range []struct {
		ua, platform                       string
		wantPlatform, wantBrands, wantFull string
		wantMobile                         bool
	}{
		{win, "Win32", "Windows", "Not_A Brand/24,Chromium/131,Google Chrome/131", "Not_A Brand/24.0.0.0,Chromium/131.0.0.0,Google Chrome/131.0.0.0", false},
		{edge, "Win32", "Windows", "Not_A Brand/24,Chromium/131,Microsoft Edge/131", "Not_A Brand/24.0.0.0,Chromium/131.0.0.0,Microsoft Edge/131.0.2903.70", false},
		{mac, "MacIntel", "macOS", "Not_A Brand/24,Chromium/131,Google Chrome/131", "Not_A Brand/24.0.0.0,Chromium/131.0.0.0,Google Chrome/131.0.0.0", false},
		{and, "Linux armv81", "Android", "Not_A Brand/24,Chromium/131,Google Chrome/131", "Not_A Brand/24.0.0.0,Chromium/131.0.0.0,Google Chrome/131.0.0.0", true},
		{lin, "Linux x86_64", "Linux", "Not_A Brand/24,Chromium/131,Google Chrome/131", "Not_A Brand/24.0.0.0,Chromium/131.0.0.0,Google Chrome/131.0.0.0", false},
	} {
		md := userAgentMetadata(c.ua, c.platform)
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
	if md := userAgentMetadata("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "Linux x86_64"); md != nil {
		t.Errorf("a Firefox user agent got Chrome's client hints: %+v", md)
	}
	if got := userAgentMetadata(mac, "MacIntel").PlatformVersion; got != "10.15.7" {
		t.Errorf("macOS platform version %q, want 10.15.7", got)
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
	for _, want := range []string{"--user-data-dir=/profile", "--headless=new", "--lang=ja-JP", "--window-size=393,873", "--user-agent=UA", "--remote-debugging-pipe", "--proxy-bypass-list=<-loopback>"} {
		if !strings.Contains(args, want) {
			t.Errorf("the browser's flags lack %s: %s", want, args)
		}
	}
}
