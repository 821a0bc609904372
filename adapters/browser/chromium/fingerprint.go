package chromium

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/emulation"

	"github.com/profilesvc/profilesvc/domain/profile"
)

var (
	chromeVersion = regexp.MustCompile(`Chrome/(\d+)((?:\.\d+)*)`)
	edgeVersion   = regexp.MustCompile(`Edg/(\d+)((?:\.\d+)*)`)
	macVersion    = regexp.MustCompile(`Mac OS X (\d+(?:_\d+)*)`)
	androidInfo   = regexp.MustCompile(`Android (\d+(?:\.\d+)*)(?:; ([^;)]+))?`)
)

// acceptLanguage is the language list of a browser set to locale: the
// locale first, then its base language ("de-DE,de"). Chromium gives the
// list as navigator.languages and adds the q-values to the
// Accept-Language header itself.
func acceptLanguage(locale string) string {
	base, _, found := strings.Cut(locale, "-")
	if !found || base == "" {
		return locale
	}
	return locale + "," + base
}

// posixLocale turns a BCP 47 tag ("de-DE") into the LANG value of the same
// locale ("de_DE.UTF-8").
func posixLocale(locale string) string {
	return strings.ReplaceAll(locale, "-", "_") + ".UTF-8"
}

// userAgentMetadata derives the client hints (navigator.userAgentData,
// Sec-CH-UA-*) that a real browser sending ua on platform would send, so
// that the hints do not contradict the user agent: the brands in the order
// and with the made-up brand the engine of that major version uses, and
// the engine's full version. It is nil for a user agent that names no
// Chrome version: such hints would be made up.
func userAgentMetadata(ua, platform, version string) *emulation.UserAgentMetadata {
	m := chromeVersion.FindStringSubmatch(ua)
	if m == nil {
		return nil
	}
	major := m[1]
	full := m[1] + m[2]
	if majorOf(version) == major {
		full = version
	}
	brand := "Google Chrome"
	if edgeVersion.MatchString(ua) {
		brand = "Microsoft Edge"
	}
	n, _ := strconv.Atoi(major) // digits, as the pattern says
	grease, greaseVersion, order := greasedBrand(n)
	var brands, fullList [3]*emulation.UserAgentBrandVersion
	brands[order[0]] = &emulation.UserAgentBrandVersion{Brand: grease, Version: greaseVersion}
	brands[order[1]] = &emulation.UserAgentBrandVersion{Brand: "Chromium", Version: major}
	brands[order[2]] = &emulation.UserAgentBrandVersion{Brand: brand, Version: major}
	fullList[order[0]] = &emulation.UserAgentBrandVersion{Brand: grease, Version: greaseVersion + ".0.0.0"}
	fullList[order[1]] = &emulation.UserAgentBrandVersion{Brand: "Chromium", Version: full}
	fullList[order[2]] = &emulation.UserAgentBrandVersion{Brand: brand, Version: full}
	md := &emulation.UserAgentMetadata{
		Brands: brands[:], FullVersionList: fullList[:],
		Architecture: "x86", Bitness: "64", FormFactors: []string{"Desktop"},
	}
	switch {
	case strings.Contains(ua, "Android"):
		md.Platform = "Android"
		md.Architecture = "arm"
		md.Mobile = strings.Contains(ua, " Mobile")
		if md.Mobile {
			md.FormFactors = []string{"Mobile"}
		}
		if a := androidInfo.FindStringSubmatch(ua); a != nil {
			md.PlatformVersion = a[1]
			md.Model = a[2]
		}
	case platform == "Win32":
		md.Platform, md.PlatformVersion = "Windows", "10.0.0"
	case platform == "MacIntel":
		md.Platform, md.PlatformVersion = "macOS", "10.15.7"
		if v := macVersion.FindStringSubmatch(ua); v != nil {
			md.PlatformVersion = strings.ReplaceAll(v[1], "_", ".")
		}
	case platform == "iPhone" || platform == "iPad":
		md.Platform, md.Architecture = "iOS", "arm"
	default:
		md.Platform = "Linux"
		if strings.Contains(platform, "arm") || strings.Contains(platform, "aarch64") {
			md.Architecture = "arm"
		}
	}
	return md
}

// overrides are the commands that make one target present a fingerprint.
type overrides struct {
	userAgent emulation.SetUserAgentOverrideParams
	timezone  emulation.SetTimezoneOverrideParams
	locale    emulation.SetLocaleOverrideParams
	metrics   emulation.SetDeviceMetricsOverrideParams
	// platformScript makes navigator.platform answer the fingerprint's
	// platform in a document or a worker. The getter stays the browser's
	// own function behind a Proxy, so it still reads as native code.
	platformScript string
}

func platformScript(platform string) string {
	quoted, _ := json.Marshal(platform) // a string always marshals
	return `(() => {
	const proto = (typeof WorkerNavigator !== "undefined" ? WorkerNavigator : Navigator).prototype;
	const d = Object.getOwnPropertyDescriptor(proto, "platform");
	if (!d || !d.get) return;
	Object.defineProperty(proto, "platform", {...d, get: new Proxy(d.get, {apply: () => ` + string(quoted) + `})});
})();`
}

// overridesFor are the overrides of fp on an engine of version.
func overridesFor(fp profile.Fingerprint, version string) overrides {
	return overrides{
		userAgent: emulation.SetUserAgentOverrideParams{
			UserAgent:         fp.UserAgent,
			AcceptLanguage:    acceptLanguage(fp.Locale),
			Platform:          fp.Platform,
			UserAgentMetadata: userAgentMetadata(fp.UserAgent, fp.Platform, version),
		},
		timezone: emulation.SetTimezoneOverrideParams{TimezoneID: fp.Timezone},
		locale:   emulation.SetLocaleOverrideParams{Locale: fp.Locale},
		metrics: emulation.SetDeviceMetricsOverrideParams{
			Width: int64(fp.Screen.Width), Height: int64(fp.Screen.Height), DeviceScaleFactor: 1,
			ScreenWidth: int64(fp.Screen.Width), ScreenHeight: int64(fp.Screen.Height),
		},
		platformScript: platformScript(fp.Platform),
	}
}
