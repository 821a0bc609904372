package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestProfilesAreGeneratedDevices: on every store, each profile is a whole
// device of its template's kind, two profiles are two devices, fields given
// win, a PATCH changes the fields it names (nested objects member by
// member), and each bad field is a 422 naming it.
func TestProfilesAreGeneratedDevices(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		a := h.register(t)
		auth := bearer(a.access)
		fingerprintOf := func(r response) map[string]any {
			t.Helper()
			fp, ok := r.data()["fingerprint"].(map[string]any)
			if !ok {
				t.Fatalf("no fingerprint: %s", r.raw)
			}
			return fp
		}
		create := func(body map[string]any) map[string]any {
			t.Helper()
			r := h.post("/api/v1/profiles", body, auth...)
			expect(t, r, http.StatusCreated)
			return r.data()
		}

		one := create(map[string]any{"name": "One", "templateId": "tpl_chrome_android_jp"})
		two := create(map[string]any{"name": "Two", "templateId": "tpl_chrome_android_jp"})
		fp1, fp2 := one["fingerprint"].(map[string]any), two["fingerprint"].(map[string]any)
		if fp1["noiseSeed"] == fp2["noiseSeed"] || reflect.DeepEqual(fp1, fp2) {
			t.Fatalf("two profiles of one template are one device:\n%v\n%v", fp1, fp2)
		}
		hints := fp1["clientHints"].(map[string]any)
		nav := fp1["navigator"].(map[string]any)
		if hints["mobile"] != true || hints["platform"] != "Android" || str(hints["model"]) == "" || nav["maxTouchPoints"].(float64) < 5 ||
			!strings.Contains(str(fp1["userAgent"]), "Android 10; K") || !slices.Equal(asStrings(nav["languages"]), []string{"ja-JP", "ja", "en-US", "en"}) {
			t.Fatalf("not a Japanese phone: %v", fp1)
		}
		// A read gives what the create answered, byte for byte.
		first := h.get("/api/v1/profiles/"+str(one["id"]), auth...)
		again := h.get("/api/v1/profiles/"+str(one["id"]), auth...)
		if !reflect.DeepEqual(fingerprintOf(first), fp1) || !bytes.Equal(first.raw, again.raw) {
			t.Fatalf("read back another device:\n%s\n%s", first.raw, again.raw)
		}

		// Fields given win over the generated device.
		given := create(map[string]any{"name": "Given", "templateId": "tpl_chrome_win_us", "fingerprint": map[string]any{
			"screen":    map[string]any{"width": 1920, "height": 1080, "pixelRatio": 1.25},
			"navigator": map[string]any{"hardwareConcurrency": 6},
			"webgl":     map[string]any{"maxViewportDims": []int{16384, 16384}},
			"fonts":     []string{"Arial", " Segoe UI ", "Arial"},
			"webrtc":    "disabled",
			"noiseSeed": "00000000000000ff",
		}})
		gfp := given["fingerprint"].(map[string]any)
		screen, webgl := gfp["screen"].(map[string]any), gfp["webgl"].(map[string]any)
		if screen["width"] != 1920.0 || screen["pixelRatio"] != 1.25 || gfp["navigator"].(map[string]any)["hardwareConcurrency"] != 6.0 ||
			!reflect.DeepEqual(webgl["maxViewportDims"], []any{16384.0, 16384.0}) || !slices.Equal(asStrings(gfp["fonts"]), []string{"Arial", "Segoe UI"}) ||
			gfp["webrtc"] != "disabled" || gfp["noiseSeed"] != "00000000000000ff" || str(webgl["renderer"]) == "" {
			t.Fatalf("given fields not applied: %v", gfp)
		}

		// A PATCH changes the fields it names and nothing else.
		id := str(given["id"])
		r := h.patch("/api/v1/profiles/"+id, map[string]any{"fingerprint": map[string]any{"navigator": map[string]any{"deviceMemory": 0.5}}}, auth...)
		expect(t, r, http.StatusOK)
		want := clone(t, gfp)
		want["navigator"].(map[string]any)["deviceMemory"] = 0.5
		if got := fingerprintOf(r); !reflect.DeepEqual(got, want) {
			t.Fatalf("patch changed more than it named:\n got %v\nwant %v", got, want)
		}
		if got := fingerprintOf(h.get("/api/v1/profiles/"+id, auth...)); !reflect.DeepEqual(got, want) {
			t.Fatalf("stored another device than the patch answered:\n got %v\nwant %v", got, want)
		}

		for field, fingerprint := range map[string]map[string]any{
			"fingerprint.navigator.hardwareConcurrency": {"navigator": map[string]any{"hardwareConcurrency": 129}},
			"fingerprint.webgl.renderer":                {"webgl": map[string]any{"renderer": "ANGLE\u202e"}},
			"fingerprint.webgl.maxViewportDims":         {"webgl": map[string]any{"maxViewportDims": []int{1, 2, 3}}},
			"fingerprint.noiseSeed":                     {"noiseSeed": "not hex"},
			"fingerprint.screen.availWidth":             {"screen": map[string]any{"availWidth": 7000}},
			"fingerprint.navigator.deviceMemory":        {"navigator": map[string]any{"deviceMemory": 3}},
			"fingerprint.clientHints.architecture":      {"clientHints": map[string]any{"architecture": "mips"}},
			"fingerprint.mediaDevices.videoInputs":      {"mediaDevices": map[string]any{"videoInputs": 17}},
		} {
			r := h.patch("/api/v1/profiles/"+id, map[string]any{"fingerprint": fingerprint}, auth...)
			expect(t, r, http.StatusUnprocessableEntity)
			if got := r.errFields(); !slices.Equal(got, []string{field}) {
				t.Errorf("%v: details name %v, want %s", fingerprint, got, field)
			}
		}
		for body, field := range map[string]string{
			`{"fingerprint":{"navigator":{"hardwareConcurrency":"eight"}}}`: "fingerprint.navigator.hardwareConcurrency",
			`{"fingerprint":{"webgl":{"depth":24}}}`:                        "fingerprint.webgl.depth",
		} {
			r := h.do(req{method: http.MethodPatch, path: "/api/v1/profiles/" + id, rawBody: []byte(body), headers: pairs(auth)})
			expect(t, r, http.StatusUnprocessableEntity)
			if !slices.Contains(r.errFields(), field) {
				t.Errorf("%s: details name %v, want %s", body, r.errFields(), field)
			}
		}
	})
}

func asStrings(v any) []string {
	var out []string
	for _, s := range asList(v) {
		out = append(out, str(s))
	}
	return out
}

// clone copies a decoded JSON object deeply.
func clone(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
