//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// TestIdempotentReplaySurvivesKill9 kills the process (SIGKILL, no shutdown
// of any kind) right after an idempotent create has answered, starts it
// again on the same embedded database with no Redis, and replays the
// request: the first answer comes back and the work is not done twice.
func TestIdempotentReplaySurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	base := "http://" + addr
	p := startProcess(t, dir, minimalEnv("HTTP_ADDR="+addr), addr)

	var signIn struct {
		AccessToken string `json:"accessToken"`
	}
	if code, err := post(base, "/api/v1/auth/register", "", map[string]string{
		"email": "replay@example.com", "password": "a long enough password", "name": "Replay",
	}, &signIn); err != nil || code != http.StatusCreated {
		t.Fatalf("register: %d %v", code, err)
	}
	var templates []struct {
		ID string `json:"id"`
	}
	if code := getData(t, base+"/api/v1/templates", signIn.AccessToken, &templates); code != http.StatusOK || len(templates) == 0 {
		t.Fatalf("templates: %d, %d of them", code, len(templates))
	}
	body, _ := json.Marshal(map[string]string{"name": "Kept", "templateId": templates[0].ID})

	first, firstBody := postWithKey(t, base, signIn.AccessToken, "create-kept-1", body)
	if first.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", first.StatusCode, firstBody)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done

	startProcess(t, dir, minimalEnv("HTTP_ADDR="+addr), addr)
	again, againBody := postWithKey(t, base, signIn.AccessToken, "create-kept-1", body)
	if again.StatusCode != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay after kill -9: %d, Idempotent-Replayed %q: %s", again.StatusCode, again.Header.Get("Idempotent-Replayed"), againBody)
	}
	if !bytes.Equal(againBody, firstBody) {
		t.Fatalf("replay answered\n%s\nthe first answer was\n%s", againBody, firstBody)
	}
	var profiles []struct {
		Name string `json:"name"`
	}
	if code := getData(t, base+"/api/v1/profiles", signIn.AccessToken, &profiles); code != http.StatusOK || len(profiles) != 1 {
		t.Fatalf("profiles: %d, %d of them, want 1", code, len(profiles))
	}
}

func postWithKey(t *testing.T, base, token, key string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/profiles", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// getData GETs url and decodes the data of the answer into out.
func getData(t *testing.T, url, token string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		t.Fatalf("decode data: %v", err)
	}
	return resp.StatusCode
}
