package profile

// Template is a built-in, internally consistent fingerprint: a user agent
// with the platform, locale, time zone and screen a real device of that
// kind reports.
type Template struct {
	ID        string
	Name      string
	Browser   string
	OS        string
	UserAgent string
	Platform  string
	Locale    string
	Timezone  string
	Screen    Screen
}

// Fingerprint is the fingerprint a profile created from t starts with.
func (t Template) Fingerprint() Fingerprint {
	return Fingerprint{UserAgent: t.UserAgent, Platform: t.Platform, Locale: t.Locale, Timezone: t.Timezone, Screen: t.Screen}
}

// BrowserChromium is the engine every built-in template runs on.
const BrowserChromium = "chromium"

const (
	uaWindows = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	uaMac     = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	uaLinux   = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	uaAndroid = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"
	uaEdgeWin = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0"
)

// templates is the catalogue, in the order GET /api/v1/templates lists it.
// Chrome reports "Windows NT 10.0" on Windows 11 and a frozen macOS version,
// as the reduced user-agent strings of current Chrome do.
var templates = []Template{
	{ID: "tpl_chrome_win_us", Name: "Chrome 131 on Windows (US)", Browser: BrowserChromium, OS: "windows",
		UserAgent: uaWindows, Platform: "Win32", Locale: "en-US", Timezone: "America/New_York", Screen: Screen{Width: 1920, Height: 1080}},
	{ID: "tpl_chrome_win_de", Name: "Chrome 131 on Windows (Germany)", Browser: BrowserChromium, OS: "windows",
		UserAgent: uaWindows, Platform: "Win32", Locale: "de-DE", Timezone: "Europe/Berlin", Screen: Screen{Width: 1536, Height: 864}},
	{ID: "tpl_edge_win_gb", Name: "Edge 131 on Windows (UK)", Browser: BrowserChromium, OS: "windows",
		UserAgent: uaEdgeWin, Platform: "Win32", Locale: "en-GB", Timezone: "Europe/London", Screen: Screen{Width: 1366, Height: 768}},
	{ID: "tpl_chrome_mac_us", Name: "Chrome 131 on macOS (US)", Browser: BrowserChromium, OS: "macos",
		UserAgent: uaMac, Platform: "MacIntel", Locale: "en-US", Timezone: "America/Los_Angeles", Screen: Screen{Width: 1512, Height: 982}},
	{ID: "tpl_chrome_mac_fr", Name: "Chrome 131 on macOS (France)", Browser: BrowserChromium, OS: "macos",
		UserAgent: uaMac, Platform: "MacIntel", Locale: "fr-FR", Timezone: "Europe/Paris", Screen: Screen{Width: 1440, Height: 900}},
	{ID: "tpl_chrome_linux_us", Name: "Chrome 131 on Linux (US)", Browser: BrowserChromium, OS: "linux",
		UserAgent: uaLinux, Platform: "Linux x86_64", Locale: "en-US", Timezone: "America/Chicago", Screen: Screen{Width: 1920, Height: 1080}},
	{ID: "tpl_chrome_linux_br", Name: "Chrome 131 on Linux (Brazil)", Browser: BrowserChromium, OS: "linux",
		UserAgent: uaLinux, Platform: "Linux x86_64", Locale: "pt-BR", Timezone: "America/Sao_Paulo", Screen: Screen{Width: 1600, Height: 900}},
	{ID: "tpl_chrome_android_us", Name: "Chrome 131 on Android (US)", Browser: BrowserChromium, OS: "android",
		UserAgent: uaAndroid, Platform: "Linux armv81", Locale: "en-US", Timezone: "America/Denver", Screen: Screen{Width: 412, Height: 915}},
	{ID: "tpl_chrome_android_jp", Name: "Chrome 131 on Android (Japan)", Browser: BrowserChromium, OS: "android",
		UserAgent: uaAndroid, Platform: "Linux armv81", Locale: "ja-JP", Timezone: "Asia/Tokyo", Screen: Screen{Width: 393, Height: 873}},
	{ID: "tpl_chrome_win_in", Name: "Chrome 131 on Windows (India)", Browser: BrowserChromium, OS: "windows",
		UserAgent: uaWindows, Platform: "Win32", Locale: "en-IN", Timezone: "Asia/Kolkata", Screen: Screen{Width: 1366, Height: 768}},
}

// Templates returns the catalogue; the caller may change the copy.
func Templates() []Template {
	out := make([]Template, len(templates))
	copy(out, templates)
	return out
}

// TemplateByID finds a template of the catalogue.
func TemplateByID(id string) (Template, bool) {
	for _, t := range templates {
		if t.ID == id {
			return t, true
		}
	}
	return Template{}, false
}
