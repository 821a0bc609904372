package browserdata

import (
	"errors"
	"strings"
	"testing"
)

func TestCleanPreferences(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{
			"an extension, a proxy and host paths are removed, the rest kept",
			`{"extensions":{"settings":{"aapocclcgogkmnckokdopfmhonfmgoek":{"path":"aapocclcgogkmnckokdopfmhonfmgoek/0.10_0","location":1}}},` +
				`"proxy":{"mode":"fixed_servers","server":"socks5://attacker.example:1080"},` +
				`"download":{"default_directory":"/etc","extensions_to_open":"sh"},` +
				`"savefile":{"default_directory":"/"},"selectfile":{"last_directory":"/root"},` +
				`"browser":{"enabled_labs_experiments":["enable-quic@2"],"window_placement":{"left":10}},` +
				`"profile":{"name":"Shop","exit_type":"Normal","content_settings":{"exceptions":{"cookies":{}}}},` +
				`"session":{"restore_on_startup":1}}`,
			`{"browser":{"window_placement":{"left":10}},"profile":{"content_settings":{"exceptions":{"cookies":{}}},"exit_type":"Normal","name":"Shop"},"session":{"restore_on_startup":1}}`,
		},
		{
			"the other keys that are configuration",
			`{"dns_over_https":{"mode":"secure","templates":"https://dns.example/{?dns}"},` +
				`"protocol_handler":{"allowed_origin_protocol_pairs":{"https://shop.example":{"ssh":true}}},` +
				`"devtools":{"file_system_paths":{"/":""}},"plugins":{"always_open_pdf_externally":true},"homepage":"https://shop.example/"}`,
			`{"homepage":"https://shop.example/"}`,
		},
		{
			"a key spelled with dots is matched by its path",
			`{"proxy.mode":"direct","extensions.settings":{},"browser.enabled_labs_experiments":["x@1"],"browser":{"enabled_labs_experiments.more":1,"show_home_button":true},"proxy_like":1}`,
			`{"browser":{"show_home_button":true},"proxy_like":1}`,
		},
		{
			"a duplicate key keeps its last value, and the output holds it alone",
			`{"proxy":{"mode":"direct"},"a":1,"a":2,"extensions":{},"extensions":{"settings":{}}}`,
			`{"a":2}`,
		},
		{
			"a configuration key hidden in a duplicate parent is removed",
			`{"browser":{"enabled_labs_experiments":["x@1"]},"browser":{"enabled_labs_experiments":["y@1"],"x":1}}`,
			`{"browser":{"x":1}}`,
		},
		{
			"numbers keep their digits, text its characters",
			"{\n  \"big\": 12345678901234567890,\n  \"f\": [2.50, -0e3, 1E400],\n  \"html\": \"<b>&amp;</b> \\u00e9\\ud83d\\ude00\"\n}\n",
			`{"big":12345678901234567890,"f":[2.50,-0e3,1E400],"html":"<b>&amp;</b> é😀"}`,
		},
		{
			"nothing to remove: the same bytes",
			`{"profile":{"name":"A"}}`,
			`{"profile":{"name":"A"}}`,
		},
		{
			"a parent that is not an object is kept as it is",
			`{"browser":1,"proxy":null}`,
			`{"browser":1}`,
		},
		{"empty", `{}`, `{}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := CleanPreferences([]byte(c.in))
			if err != nil {
				t.Fatalf("CleanPreferences: %v", err)
			}
			if string(got) != c.want {
				t.Fatalf("CleanPreferences =\n%s\nwant\n%s", got, c.want)
			}
			again, err := CleanPreferences(got)
			if err != nil || string(again) != c.want {
				t.Fatalf("cleaning again = %s, %v; want the same bytes", again, err)
			}
		})
	}
}

func TestCleanPreferencesRefusesWhatIsNotAnObject(t *testing.T) {
	for _, in := range []string{"", "not json", "[]", "null", `"text"`, "{} {}", `{"a":1} x`, `{"a":`, `{"a":1,}`} {
		if out, err := CleanPreferences([]byte(in)); !errors.Is(err, ErrUnreadablePreferences) {
			t.Errorf("CleanPreferences(%q) = %q, %v; want ErrUnreadablePreferences", in, out, err)
		}
	}
}

func TestCleanPreferencesBoundsTheSize(t *testing.T) {
	// Exactly the bound: {"a":"xxx...x"} of 4 MiB.
	at := `{"a":"` + strings.Repeat("x", 4<<20-8) + `"}`
	if len(at) != 4<<20 {
		t.Fatalf("fixture of %d bytes", len(at))
	}
	if out, err := CleanPreferences([]byte(at)); err != nil || string(out) != at {
		t.Fatalf("preferences of exactly 4 MiB: %d bytes, %v", len(out), err)
	}
	over := `{"a":"` + strings.Repeat("x", 4<<20-7) + `"}`
	_, err := CleanPreferences([]byte(over))
	assertInvalid(t, err, `"Default/Preferences"`)
	assertInvalid(t, err, "larger than 4194304 bytes")
}
