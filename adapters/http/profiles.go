package httpapi

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
)

// ProfileHandlers serves templates, profiles and their sessions.
type ProfileHandlers struct{ svc *profiles.Service }

// NewProfileHandlers returns the profile endpoints of svc.
func NewProfileHandlers(svc *profiles.Service) *ProfileHandlers { return &ProfileHandlers{svc: svc} }

// Routes lists the profile endpoints.
func (h *ProfileHandlers) Routes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/api/v1/templates", Handler: h.listTemplates, Name: "templates.list"},
		{Method: http.MethodGet, Path: "/api/v1/templates/{id}", Handler: h.getTemplate, Name: "templates.read"},
		{Method: http.MethodGet, Path: "/api/v1/profiles", Handler: h.list, Name: "profiles.list"},
		{Method: http.MethodPost, Path: "/api/v1/profiles", Handler: h.create, Name: "profiles.create"},
		{Method: http.MethodGet, Path: "/api/v1/profiles/{id}", Handler: h.get, Name: "profiles.read"},
		{Method: http.MethodPatch, Path: "/api/v1/profiles/{id}", Handler: h.update, Name: "profiles.update"},
		{Method: http.MethodDelete, Path: "/api/v1/profiles/{id}", Handler: h.delete, Name: "profiles.delete"},
		{Method: http.MethodPost, Path: "/api/v1/profiles/{id}/launch", Handler: h.launch, Name: "profiles.launch"},
		{Method: http.MethodPost, Path: "/api/v1/profiles/{id}/heartbeat", Handler: h.heartbeat, Name: "profiles.heartbeat"},
		{Method: http.MethodPost, Path: "/api/v1/profiles/{id}/release", Handler: h.release, Name: "profiles.release"},
		{Method: http.MethodGet, Path: "/api/v1/fleet", Handler: h.fleet, Name: "fleet.read"},
	}
}

// templateDTO is a template with its representative device: the fields
// a profile made from it starts with, and the whole device.
type templateDTO struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Browser     string         `json:"browser"`
	OS          string         `json:"os"`
	UserAgent   string         `json:"userAgent"`
	Platform    string         `json:"platform"`
	Locale      string         `json:"locale"`
	Timezone    string         `json:"timezone"`
	Screen      screenDTO      `json:"screen"`
	Fingerprint fingerprintDTO `json:"fingerprint"`
}

func toTemplateDTO(t profiles.Template) templateDTO {
	fp := toFingerprintDTO(t.Device)
	return templateDTO{
		ID: t.ID, Name: t.Name, Browser: t.Browser, OS: t.OS, UserAgent: fp.UserAgent,
		Platform: fp.Platform, Locale: fp.Locale, Timezone: fp.Timezone, Screen: fp.Screen, Fingerprint: fp,
	}
}

type proxyRefDTO struct {
	ID   string `json:"id"`
	Type string `json:"type,omitempty"`
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
}

type browserSessionDTO struct {
	ID         string  `json:"id"`
	StartedAt  int64   `json:"startedAt"`
	ExpiresAt  int64   `json:"expiresAt"`
	LaunchedBy string  `json:"launchedBy"`
	Headless   bool    `json:"headless"`
	CDPURL     *string `json:"cdpUrl"`
}

func toBrowserSessionDTO(s profile.Session) browserSessionDTO {
	d := browserSessionDTO{
		ID: s.ID, StartedAt: s.StartedAt.UnixMilli(), ExpiresAt: s.ExpiresAt.UnixMilli(),
		LaunchedBy: s.LaunchedBy, Headless: s.Headless,
	}
	if s.CDPURL != "" {
		d.CDPURL = &s.CDPURL
	}
	return d
}

type profileDTO struct {
	ID          string             `json:"id"`
	Name        string             `json:"name"`
	TemplateID  string             `json:"templateId"`
	Browser     string             `json:"browser"`
	Fingerprint fingerprintDTO     `json:"fingerprint"`
	Proxy       *proxyRefDTO       `json:"proxy"`
	Tags        []string           `json:"tags"`
	Notes       string             `json:"notes"`
	Status      string             `json:"status"`
	Session     *browserSessionDTO `json:"session"`
	Data        *dataDTO           `json:"data"`
	Version     int                `json:"version"`
	CreatedAt   int64              `json:"createdAt"`
	UpdatedAt   int64              `json:"updatedAt"`
}

func toProfileDTO(p profile.Profile) profileDTO {
	d := profileDTO{
		ID: p.ID, Name: p.Name, TemplateID: p.TemplateID, Browser: p.Browser,
		Fingerprint: toFingerprintDTO(p.Fingerprint),
		Tags:        p.Tags, Notes: p.Notes, Status: string(p.Status()), Version: p.Version,
		CreatedAt: p.CreatedAt.UnixMilli(), UpdatedAt: p.UpdatedAt.UnixMilli(),
	}
	if d.Tags == nil {
		d.Tags = []string{}
	}
	switch {
	case p.Proxy != nil:
		d.Proxy = &proxyRefDTO{ID: p.Proxy.ID, Type: p.Proxy.Type, Host: p.Proxy.Host, Port: p.Proxy.Port}
	case p.ProxyID != "":
		d.Proxy = &proxyRefDTO{ID: p.ProxyID}
	}
	if p.Session != nil {
		s := toBrowserSessionDTO(*p.Session)
		d.Session = &s
	}
	if p.Data != nil {
		data := toDataDTO(*p.Data)
		d.Data = &data
	}
	return d
}

// profileSummaryDTO is a profile as a list shows it: its fingerprint is
// the summary of API.md's profile record, without the device (a read of
// the profile has it). Its Fingerprint hides profileDTO's, the embedded
// struct's field being deeper.
type profileSummaryDTO struct {
	profileDTO
	Fingerprint fingerprintSummaryDTO `json:"fingerprint"`
}

type fingerprintSummaryDTO struct {
	UserAgent string        `json:"userAgent"`
	Platform  string        `json:"platform"`
	Locale    string        `json:"locale"`
	Timezone  string        `json:"timezone"`
	Screen    screenSizeDTO `json:"screen"`
}

type screenSizeDTO struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

type createProfileRequest struct {
	Name        string               `json:"name"`
	TemplateID  string               `json:"templateId"`
	Proxy       jsontext.Value       `json:"proxy"`
	Fingerprint *fingerprintPatchDTO `json:"fingerprint"`
	Tags        []string             `json:"tags"`
	Notes       string               `json:"notes"`
}

func (createProfileRequest) readOnlyFields() []string { return profileReadOnly }

var profileReadOnly = []string{"browser", "session", "data"}

// profileProxy reads the proxy field: absent or null is no proxy (id ""),
// {"id": ...} a stored proxy of the team, and {type, host, port,
// username?, password?} or {url} a new proxy stored with the profile
// (inline).
func profileProxy(raw jsontext.Value) (string, *proxy.Input, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	const either = `must be null, {"id": "prx_..."} or a proxy {type, host, port, username?, password?}`
	var ref map[string]jsontext.Value
	if err := decodeProxy("proxy", raw, &ref, either); err != nil {
		return "", nil, err
	}
	if _, ok := ref["id"]; ok {
		const stored = `must be null or {"id": "prx_..."} naming a stored proxy`
		var id string
		if err := decodeProxy("proxy.id", ref["id"], &id, stored); err != nil {
			return "", nil, err
		}
		if len(ref) != 1 || id == "" {
			return "", nil, domain.Invalid("proxy", stored)
		}
		return id, nil, nil
	}
	var in proxyRequest
	if err := decodeProxy("proxy", raw, &in, either); err != nil {
		return "", nil, err
	}
	if in.Name != nil {
		return "", nil, domain.Invalid("proxy", either)
	}
	inline, err := in.input()
	if err != nil {
		return "", nil, err
	}
	return "", &inline, nil
}

// decodeProxy reads raw, the value of field (proxy or one of its members),
// into dst by requestJSON. A string with a NUL is named, as in the rest of the body
// (proxy.host); any other error is the proxy's as a whole, with message.
func decodeProxy(field string, raw jsontext.Value, dst any, message string) error {
	err := json.Unmarshal(raw, dst, requestJSON)
	var sem *json.SemanticError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &sem) && errors.Is(sem.Err, errNUL):
		return domain.Invalid(fieldPath(field, raw, sem.JSONPointer, true), errNUL.Error())
	}
	return domain.Invalid("proxy", message)
}

func (h *ProfileHandlers) listTemplates(w http.ResponseWriter, r *http.Request) error {
	ts, err := h.svc.Templates(actorFrom(r.Context()))
	if err != nil {
		return err
	}
	out := make([]templateDTO, 0, len(ts))
	for _, t := range ts {
		out = append(out, toTemplateDTO(t))
	}
	writeList(w, out, "", len(out))
	return nil
}

func (h *ProfileHandlers) getTemplate(w http.ResponseWriter, r *http.Request) error {
	t, err := h.svc.Template(actorFrom(r.Context()), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toTemplateDTO(t))
	return nil
}

func (h *ProfileHandlers) create(w http.ResponseWriter, r *http.Request) error {
	var in createProfileRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	proxyID, inline, err := profileProxy(in.Proxy)
	if err != nil {
		return err
	}
	p, err := h.svc.Create(r.Context(), actorFrom(r.Context()), profile.Settings{
		Name: in.Name, TemplateID: in.TemplateID, Fingerprint: in.Fingerprint.patch(),
		ProxyID: proxyID, InlineProxy: inline, Tags: in.Tags, Notes: in.Notes,
	})
	if err != nil {
		return err
	}
	writeProfile(w, http.StatusCreated, p)
	return nil
}

// writeProfile answers with a profile and its version as the ETag, for
// If-Match on the next PATCH.
func writeProfile(w http.ResponseWriter, status int, p profile.Profile) {
	w.Header().Set("ETag", strconv.Quote(strconv.Itoa(p.Version)))
	writeJSON(w, status, toProfileDTO(p))
}

func (h *ProfileHandlers) get(w http.ResponseWriter, r *http.Request) error {
	p, err := h.svc.Get(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	writeProfile(w, http.StatusOK, p)
	return nil
}

func (h *ProfileHandlers) list(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	in := profiles.ListInput{Query: q.Get("q"), Status: q.Get("status"), Tag: q.Get("tag"), Cursor: cursor, Limit: limit}
	page, err := h.svc.List(r.Context(), actorFrom(r.Context()), in)
	if err != nil {
		return err
	}
	items := make([]profileSummaryDTO, 0, len(page.Items))
	for _, p := range page.Items {
		fp := p.Fingerprint
		items = append(items, profileSummaryDTO{
			profileDTO: toProfileDTO(p),
			Fingerprint: fingerprintSummaryDTO{
				UserAgent: fp.UserAgent, Platform: fp.Platform, Locale: fp.Locale, Timezone: fp.Timezone,
				Screen: screenSizeDTO{Width: fp.Screen.Width, Height: fp.Screen.Height},
			},
		})
	}
	writeList(w, items, page.NextCursor, page.Limit)
	return nil
}

type updateProfileRequest struct {
	Name        *string              `json:"name"`
	TemplateID  *string              `json:"templateId"`
	Proxy       jsontext.Value       `json:"proxy"`
	Fingerprint *fingerprintPatchDTO `json:"fingerprint"`
	Tags        *[]string            `json:"tags"`
	Notes       *string              `json:"notes"`
}

func (updateProfileRequest) readOnlyFields() []string { return profileReadOnly }

// ifMatch reads If-Match (RFC 9110, section 13.1.1) as the version Update
// checks: nil for no field or "*" (a profile that exists has a current
// version), the version a listed strong tag names ("3", or a bare 3 as this
// API once asked), or 0, which no profile has, when no listed tag can match
// (a weak tag never does: If-Match compares strongly; nor does a tag that
// is not a version). Only a field that is neither "*" nor a list of entity
// tags is 400.
func (h *ProfileHandlers) ifMatch(r *http.Request) (*int, error) {
	field, err := parseIfMatch(r.Header.Values("If-Match"), func(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" })
	if err != nil {
		return nil, domain.BadRequest(`If-Match must be "*" or entity tags such as the profile's ETag ("3")`)
	}
	if !field.present || field.any {
		return nil, nil
	}
	var versions []int
	for _, tag := range field.strong {
		// Compared as opaque strings: "03" is not the ETag "3".
		if n, err := strconv.Atoi(tag); err == nil && n >= 1 && strconv.Itoa(n) == tag {
			versions = append(versions, n)
		}
	}
	switch len(versions) {
	case 0:
		none := 0
		return &none, nil
	case 1:
		return &versions[0], nil
	}
	// Update checks one version, in the unit that writes; of a list, the
	// current one is the one that can match there.
	p, err := h.svc.Get(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"])
	if err != nil {
		return nil, err
	}
	if slices.Contains(versions, p.Version) {
		return &p.Version, nil
	}
	return &versions[0], nil
}

func (h *ProfileHandlers) update(w http.ResponseWriter, r *http.Request) error {
	version, err := h.ifMatch(r)
	if err != nil {
		return err
	}
	var in updateProfileRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	patch := profile.Patch{Name: in.Name, TemplateID: in.TemplateID, Tags: in.Tags, Notes: in.Notes}
	if in.Fingerprint != nil {
		fp := in.Fingerprint.patch()
		patch.Fingerprint = &fp
	}
	if in.Proxy != nil {
		id, inline, err := profileProxy(in.Proxy)
		if err != nil {
			return err
		}
		patch.ProxyID, patch.InlineProxy = &id, inline
	}
	p, err := h.svc.Update(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"], patch, version)
	if err != nil {
		return err
	}
	writeProfile(w, http.StatusOK, p)
	return nil
}

func (h *ProfileHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.Delete(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"]); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}

type launchRequest struct {
	Headless   bool `json:"headless"`
	TTLSeconds *int `json:"ttlSeconds"`
}

type sessionEnvelope struct {
	Session browserSessionDTO `json:"session"`
}

func (h *ProfileHandlers) launch(w http.ResponseWriter, r *http.Request) error {
	var in launchRequest
	if err := decodeOptionalJSON(w, r, &in); err != nil {
		return err
	}
	p, err := h.svc.Launch(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"], profiles.LaunchInput(in))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sessionEnvelope{Session: toBrowserSessionDTO(*p.Session)})
	return nil
}

type heartbeatRequest struct {
	SessionID  string `json:"sessionId"`
	TTLSeconds *int   `json:"ttlSeconds"`
}

func (h *ProfileHandlers) heartbeat(w http.ResponseWriter, r *http.Request) error {
	var in heartbeatRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	p, err := h.svc.Heartbeat(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"], in.SessionID, in.TTLSeconds)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sessionEnvelope{Session: toBrowserSessionDTO(*p.Session)})
	return nil
}

func (h *ProfileHandlers) release(w http.ResponseWriter, r *http.Request) error {
	var none struct{}
	if err := decodeOptionalJSON(w, r, &none); err != nil {
		return err
	}
	p, err := h.svc.Release(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	writeProfile(w, http.StatusOK, p)
	return nil
}
