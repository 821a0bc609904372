package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
)

func (c *Console) profileRoutes() []route {
	get, post := http.MethodGet, http.MethodPost
	return []route{
		{get, Prefix + "/profiles", c.signedIn(c.profileList)},
		{get, Prefix + "/profiles/status", c.signedIn(c.profileStatus)},
		{get, Prefix + "/profiles/new", c.signedIn(c.profileNew)},
		{post, Prefix + "/profiles/new", c.signedIn(c.profileCreate)},
		{get, Prefix + "/profiles/{id}", c.signedIn(c.profileShow)},
		{get, Prefix + "/profiles/{id}/edit", c.signedIn(c.profileEdit)},
		{post, Prefix + "/profiles/{id}/edit", c.signedIn(c.profileUpdate)},
		{get, Prefix + "/profiles/{id}/delete", c.signedIn(c.profileDeleteForm)},
		{post, Prefix + "/profiles/{id}/delete", c.signedIn(c.profileDelete)},
		{post, Prefix + "/profiles/{id}/launch", c.signedIn(c.profileLaunch)},
		{post, Prefix + "/profiles/{id}/release", c.signedIn(c.profileRelease)},
	}
}

// profileListPage is the profile list with its filters and the link to the
// next page.
type profileListPage struct {
	Items               []profile.Profile
	Query, Status, Tag  string
	Next                string
	Statuses            []string
	Filtered, HasFilter bool
}

func (c *Console) profileList(q *request) error {
	v := q.r.URL.Query()
	in := profiles.ListInput{Query: v.Get("q"), Status: v.Get("status"), Tag: v.Get("tag"), Cursor: v.Get("cursor"), Limit: 25}
	page, err := c.svc.Profiles.List(q.r.Context(), q.actor, in)
	if err != nil {
		return err
	}
	data := profileListPage{
		Items: page.Items, Query: in.Query, Status: in.Status, Tag: in.Tag,
		Statuses:  []string{string(profile.StatusIdle), string(profile.StatusRunning)},
		HasFilter: in.Query != "" || in.Status != "" || in.Tag != "",
	}
	if page.NextCursor != "" {
		next := url.Values{"cursor": {page.NextCursor}}
		for k, val := range map[string]string{"q": in.Query, "status": in.Status, "tag": in.Tag} {
			if val != "" {
				next.Set(k, val)
			}
		}
		data.Next = Prefix + "/profiles?" + next.Encode()
	}
	return c.render(q, http.StatusOK, "profiles", "Profiles", data)
}

// profileStatus answers the statuses of the profiles named by id (at most
// 50), for the pages that keep them fresh: {"prf_…": "running"}. A profile
// of another team, or gone, is left out.
func (c *Console) profileStatus(q *request) error {
	ids := q.r.URL.Query()["id"]
	if len(ids) > 50 {
		return domain.BadRequest("at most 50 ids")
	}
	out := map[string]string{}
	for _, id := range ids {
		p, err := c.svc.Profiles.Get(q.r.Context(), q.actor, id)
		if domain.IsKind(err, domain.KindNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		out[id] = string(p.Status())
	}
	q.w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(q.w).Encode(out)
}

// profileForm is the create and edit form as sent, shown again on refusal.
type profileForm struct {
	ID, Name, TemplateID, Locale, Timezone, Tags, Notes string
	// ProxyID is the stored proxy chosen, "" for none.
	ProxyID   string
	Version   int
	Templates []profiles.Template
	// Proxies are the team's stored proxies to choose from (the newest
	// 100; a proxy beyond them is kept when the form is sent back).
	Proxies []proxy.Proxy
	// Chosen is the template the form shows the device of.
	Chosen *profiles.Template
}

// templates fills what the form offers: the templates and the team's
// proxies.
func (c *Console) templates(q *request, f *profileForm) error {
	ts, err := c.svc.Profiles.Templates(q.actor)
	if err != nil {
		return err
	}
	px, err := c.svc.Proxies.List(q.r.Context(), q.actor, "", "", paging.MaxLimit)
	if err != nil {
		return err
	}
	f.Proxies = px.Items
	if f.ProxyID != "" && !slices.ContainsFunc(f.Proxies, func(p proxy.Proxy) bool { return p.ID == f.ProxyID }) {
		f.Proxies = append(f.Proxies, proxy.Proxy{ID: f.ProxyID, Name: f.ProxyID})
	}
	f.Templates = ts
	if f.TemplateID == "" && len(ts) > 0 {
		f.TemplateID = ts[0].ID
	}
	if i := slices.IndexFunc(ts, func(t profiles.Template) bool { return t.ID == f.TemplateID }); i >= 0 {
		f.Chosen = &ts[i]
	}
	return nil
}

func (c *Console) profileNew(q *request) error {
	f := profileForm{TemplateID: q.r.URL.Query().Get("template")}
	if err := c.templates(q, &f); err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "profile_form", "New profile", f)
}

func readProfileForm(q *request) (profileForm, error) {
	v, err := form(q)
	if err != nil {
		return profileForm{}, err
	}
	f := profileForm{
		Name: v.Get("name"), TemplateID: v.Get("template"), Locale: strings.TrimSpace(v.Get("locale")),
		Timezone: strings.TrimSpace(v.Get("timezone")), Tags: v.Get("tags"), Notes: v.Get("notes"),
		ProxyID: v.Get("proxy"),
	}
	if s := v.Get("version"); s != "" {
		if f.Version, err = strconv.Atoi(s); err != nil {
			return f, domain.BadRequest("the form's version is not a number")
		}
	}
	return f, nil
}

// tags reads the comma-separated tags field.
func (f profileForm) tags() []string {
	var out []string
	for t := range strings.SplitSeq(f.Tags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// fingerprint is what the form overrides of the template's device.
func (f profileForm) fingerprint() profile.FingerprintPatch {
	var p profile.FingerprintPatch
	if f.Locale != "" {
		p.Locale = &f.Locale
	}
	if f.Timezone != "" {
		p.Timezone = &f.Timezone
	}
	return p
}

func (c *Console) profileCreate(q *request) error {
	f, err := readProfileForm(q)
	if err != nil {
		return err
	}
	p, err := c.svc.Profiles.Create(q.r.Context(), q.actor, profile.Settings{
		Name: f.Name, TemplateID: f.TemplateID, Fingerprint: f.fingerprint(), Tags: f.tags(), Notes: f.Notes,
		ProxyID: f.ProxyID,
	})
	if err != nil {
		if terr := c.templates(q, &f); terr != nil {
			return terr
		}
		return c.renderWith(q, 0, "profile_form", "New profile", f, err)
	}
	return c.redirect(q, Prefix+"/profiles/"+url.PathEscape(p.ID), "Profile "+p.Name+" created.")
}

// profilePage is one profile with what its page offers.
type profilePage struct {
	Profile profile.Profile
	// CDPURL is the session's address with its token: shown once, on the
	// page that answers the launch, like the API's launch answer.
	CDPURL string
}

func (c *Console) profileShow(q *request) error {
	p, err := c.svc.Profiles.Get(q.r.Context(), q.actor, mux.Vars(q.r)["id"])
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "profile", p.Name, profilePage{Profile: p})
}

func (c *Console) profileEdit(q *request) error {
	p, err := c.svc.Profiles.Get(q.r.Context(), q.actor, mux.Vars(q.r)["id"])
	if err != nil {
		return err
	}
	f := profileForm{
		ID: p.ID, Name: p.Name, TemplateID: p.TemplateID, Locale: p.Fingerprint.Locale, Timezone: p.Fingerprint.Timezone,
		Tags: strings.Join(p.Tags, ", "), Notes: p.Notes, Version: p.Version, ProxyID: p.ProxyID,
	}
	if err := c.templates(q, &f); err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "profile_form", "Edit "+p.Name, f)
}

func (c *Console) profileUpdate(q *request) error {
	id := mux.Vars(q.r)["id"]
	f, err := readProfileForm(q)
	if err != nil {
		return err
	}
	f.ID = id
	cur, err := c.svc.Profiles.Get(q.r.Context(), q.actor, id)
	if err != nil {
		return err
	}
	tags := f.tags()
	patch := profile.Patch{Name: &f.Name, Tags: &tags, Notes: &f.Notes}
	if f.TemplateID != cur.TemplateID {
		patch.TemplateID = &f.TemplateID
	}
	if f.ProxyID != cur.ProxyID {
		patch.ProxyID = &f.ProxyID
	}
	if fp := f.fingerprint(); f.Locale != cur.Fingerprint.Locale || f.Timezone != cur.Fingerprint.Timezone || patch.TemplateID != nil {
		patch.Fingerprint = &fp
	}
	// The version the form was read at: a change made meanwhile is not
	// overwritten unseen.
	p, err := c.svc.Profiles.Update(q.r.Context(), q.actor, id, patch, &f.Version)
	if err != nil {
		if terr := c.templates(q, &f); terr != nil {
			return terr
		}
		return c.renderWith(q, 0, "profile_form", "Edit "+cur.Name, f, err)
	}
	return c.redirect(q, Prefix+"/profiles/"+url.PathEscape(p.ID), "Profile saved.")
}

func (c *Console) profileDeleteForm(q *request) error {
	p, err := c.svc.Profiles.Get(q.r.Context(), q.actor, mux.Vars(q.r)["id"])
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "profile_delete", "Delete "+p.Name, profilePage{Profile: p})
}

func (c *Console) profileDelete(q *request) error {
	id := mux.Vars(q.r)["id"]
	if _, err := form(q); err != nil {
		return err
	}
	if err := c.svc.Profiles.Delete(q.r.Context(), q.actor, id); err != nil {
		return err
	}
	return c.redirect(q, Prefix+"/profiles", "Profile deleted.")
}

func (c *Console) profileLaunch(q *request) error {
	id := mux.Vars(q.r)["id"]
	v, err := form(q)
	if err != nil {
		return err
	}
	p, err := c.svc.Profiles.Launch(q.r.Context(), q.actor, id, profiles.LaunchInput{Headless: v.Get("headless") == "on"})
	if err != nil {
		return err
	}
	page := profilePage{Profile: p}
	if p.Session != nil {
		page.CDPURL = p.Session.CDPURL
		// What the page keeps showing afterwards is the address without
		// its token, as a read of the profile shows it.
		s := *p.Session
		s.CDPURL, _, _ = strings.Cut(s.CDPURL, "?")
		page.Profile.Session = &s
	}
	q.w.Header().Set("Cache-Control", "no-store")
	return c.render(q, http.StatusOK, "profile", p.Name, page)
}

func (c *Console) profileRelease(q *request) error {
	id := mux.Vars(q.r)["id"]
	if _, err := form(q); err != nil {
		return err
	}
	p, err := c.svc.Profiles.Release(q.r.Context(), q.actor, id)
	if err != nil {
		return err
	}
	return c.redirect(q, Prefix+"/profiles/"+url.PathEscape(p.ID), "Browser released; its data are saved.")
}
