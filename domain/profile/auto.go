package profile

import "strings"

// Auto, as a fingerprint's timezone or locale, follows the profile's proxy:
// at launch they take the time zone of the proxy's last check and a locale
// of its country, so that the clock and language match the exit address.
const Auto = "auto"

// Fallbacks when the proxy has not told: no proxy, never checked, or a
// check that saw no time zone or country.
const (
	FallbackTimezone = "UTC"
	FallbackLocale   = "en-US"
)

// countryLocales names the locale most of a country's browsers report, for
// the countries proxies are most often in; another country gets its
// language's most common form where it is one of these, else the fallback.
var countryLocales = map[string]string{
	"US": "en-US", "GB": "en-GB", "CA": "en-CA", "AU": "en-AU", "NZ": "en-NZ", "IE": "en-IE",
	"IN": "en-IN", "SG": "en-SG", "ZA": "en-ZA", "PH": "en-PH", "NG": "en-NG",
	"DE": "de-DE", "AT": "de-AT", "CH": "de-CH", "FR": "fr-FR", "BE": "fr-BE", "LU": "fr-LU",
	"ES": "es-ES", "MX": "es-MX", "AR": "es-AR", "CO": "es-CO", "CL": "es-CL", "PE": "es-PE",
	"IT": "it-IT", "PT": "pt-PT", "BR": "pt-BR", "NL": "nl-NL", "SE": "sv-SE", "NO": "nb-NO",
	"DK": "da-DK", "FI": "fi-FI", "PL": "pl-PL", "CZ": "cs-CZ", "SK": "sk-SK", "HU": "hu-HU",
	"RO": "ro-RO", "BG": "bg-BG", "GR": "el-GR", "TR": "tr-TR", "UA": "uk-UA", "RU": "ru-RU",
	"IL": "he-IL", "SA": "ar-SA", "AE": "ar-AE", "EG": "ar-EG", "IR": "fa-IR",
	"JP": "ja-JP", "KR": "ko-KR", "CN": "zh-CN", "TW": "zh-TW", "HK": "zh-HK",
	"TH": "th-TH", "VN": "vi-VN", "ID": "id-ID", "MY": "ms-MY",
}

// LocaleOf returns the locale of a country (ISO 3166-1 alpha-2, any case),
// or the fallback.
func LocaleOf(country string) string {
	if l, ok := countryLocales[strings.ToUpper(strings.TrimSpace(country))]; ok {
		return l
	}
	return FallbackLocale
}

// Resolve returns the fingerprint with "auto" replaced: the timezone by
// timezone (when it is a valid zone), the locale by that of country and
// the languages by that locale's.
func (fp Fingerprint) Resolve(timezone, country string) Fingerprint {
	if fp.Timezone == Auto {
		fp.Timezone = FallbackTimezone
		if validTimezone(timezone) {
			fp.Timezone = timezone
		}
	}
	if fp.Locale == Auto {
		fp.Locale = LocaleOf(country)
		fp.Navigator.Languages = LanguagesFor(fp.Locale)
	}
	return fp
}
