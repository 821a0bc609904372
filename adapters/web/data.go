package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/gorilla/mux"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	appdata "github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/application/snapshots"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/snapshot"
	"github.com/profilesvc/profilesvc/domain/team"
)

// dataRoutes are a profile's browser data and its time machine (snapshots).
func (c *Console) dataRoutes() []route {
	get, post := http.MethodGet, http.MethodPost
	p := Prefix + "/profiles/{id}"
	return []route{
		{get, p + "/data", c.signedIn(c.dataShow)},
		{post, p + "/data", c.signedIn(c.dataUpload)},
		{get, p + "/data/archive", c.signedIn(c.dataDownload)},
		{get, p + "/data/delete", c.signedIn(c.dataDeleteForm)},
		{post, p + "/data/delete", c.signedIn(c.dataDelete)},
		{get, p + "/cookies.json", c.signedIn(c.cookiesExport)},
		{post, p + "/cookies", c.signedIn(c.cookiesImport)},
		{get, p + "/snapshots", c.signedIn(c.snapshotList)},
		{post, p + "/snapshots", c.signedIn(c.snapshotCreate)},
		{get, p + "/snapshots/{snapshotId}/restore", c.signedIn(c.snapshotRestoreForm)},
		{post, p + "/snapshots/{snapshotId}/restore", c.signedIn(c.snapshotRestore)},
		{get, p + "/snapshots/{snapshotId}/delete", c.signedIn(c.snapshotDeleteForm)},
		{post, p + "/snapshots/{snapshotId}/delete", c.signedIn(c.snapshotDelete)},
	}
}

// Bounds of the console's uploads besides the archive limit the service
// applies (PROFILE_DATA_MAX).
const (
	// dataUploadSlack is what a multipart body may carry beyond the archive:
	// its boundaries and part headers.
	dataUploadSlack = 1 << 20
	// maxCookiesFile bounds a cookie file, as the API bounds a cookie list.
	maxCookiesFile = 8 << 20
)

// dataPage is a profile's browser data and cookies with what the page
// offers.
type dataPage struct {
	Profile profile.Profile
	// Max and Unpacked are the archive limits: as sent and unpacked.
	Max, Unpacked int64
}

func (c *Console) dataPageOf(p profile.Profile) dataPage {
	max := c.svc.Data.DataMax()
	return dataPage{Profile: p, Max: max, Unpacked: max * appdata.DataUnpackedFactor}
}

func (c *Console) dataShow(q *request) error {
	p, err := c.svc.Profiles.Get(q.r.Context(), q.actor, mux.Vars(q.r)["id"])
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "data", "Browser data of "+p.Name, c.dataPageOf(p))
}

// dataRefused shows the data page again with what refused an upload: a
// size limit as 413 in words, any other refusal as its own status. A
// refusal that is not about the upload (no such profile, not allowed) is
// the error page.
func (c *Console) dataRefused(q *request, id string, failure error) error {
	if domain.IsKind(failure, domain.KindNotFound) || domain.IsKind(failure, domain.KindForbidden) || domain.IsKind(failure, domain.KindUnauthorized) {
		return failure
	}
	p, err := c.svc.Profiles.Get(q.r.Context(), q.actor, id)
	if err != nil {
		return err
	}
	data, title := c.dataPageOf(p), "Browser data of "+p.Name
	if tooBig, ok := tooLargeProblem(failure, data); ok {
		if err := c.layout(q); err != nil {
			return err
		}
		v := view{Title: title, Me: q.me, Teams: q.teams, Actor: q.actor, Assets: c.assets, Data: data, Error: &tooBig}
		return c.write(q.w, tooBig.Status, "data", v)
	}
	var de *domain.Error
	if !errors.As(failure, &de) {
		return failure
	}
	if de.Kind == domain.KindConflict && p.Session != nil {
		failure = &domain.Error{Kind: domain.KindConflict, Message: de.Message + ". Release the profile first, then try again.", Err: de}
	}
	return c.renderWith(q, 0, "data", title, data, failure)
}

// tooLargeProblem says in words that an upload passed a size limit.
func tooLargeProblem(err error, d dataPage) (problem, bool) {
	if !errors.Is(err, browserdata.ErrTooLarge) {
		return problem{}, false
	}
	return problem{
		Status: http.StatusRequestEntityTooLarge, Heading: "Too large",
		Message: fmt.Sprintf("The upload was refused and nothing was stored: browser data may be at most %s as uploaded and %s unpacked (%v).",
			humanBytes(d.Max), humanBytes(d.Unpacked), err),
	}, true
}

func humanBytes(n int64) string {
	return funcs["bytes"].(func(int64) string)(n)
}

// uploadedFile finds the file part named field of a multipart form, the
// whole body bounded by limit. An empty file (the form sent without a
// file chosen) is refused.
func uploadedFile(q *request, field string, limit int64) (io.Reader, error) {
	q.r.Body = http.MaxBytesReader(q.w, q.r.Body, limit)
	mr, err := q.r.MultipartReader()
	if err != nil {
		return nil, domain.BadRequest("the upload must be sent as the page's form sends it (multipart/form-data)")
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil, domain.Invalid(field, "choose a file to upload")
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return nil, fmt.Errorf("%w: the upload exceeds %d bytes", browserdata.ErrTooLarge, limit)
			}
			return nil, domain.BadRequest("the upload could not be read")
		}
		if part.FormName() != field {
			continue // the next part skips what is left of this one
		}
		return nonEmpty(part, field)
	}
}

// nonEmpty refuses a part without content.
func nonEmpty(part *multipart.Part, field string) (io.Reader, error) {
	br := bufio.NewReader(part)
	if _, err := br.Peek(1); err != nil {
		if err == io.EOF {
			return nil, domain.Invalid(field, "choose a file to upload: the one sent is empty")
		}
		return nil, domain.BadRequest("the upload could not be read")
	}
	return br, nil
}

func (c *Console) dataUpload(q *request) error {
	id := mux.Vars(q.r)["id"]
	// Who may not upload, or has no such profile, is refused before the
	// body is read, and before the read timeout is lifted for it.
	if _, err := c.svc.Profiles.Get(q.r.Context(), q.actor, id); err != nil {
		return err
	}
	if err := q.actor.Require(team.ActWrite); err != nil {
		return err
	}
	if err := http.NewResponseController(q.w).SetReadDeadline(time.Now().Add(c.opts.UploadTimeout)); err != nil {
		httpapi.RequestLogger(q.r.Context()).Warn("could not extend the read deadline of a console upload: " + err.Error())
	}
	body, err := uploadedFile(q, "archive", c.svc.Data.DataMax()+dataUploadSlack)
	if err != nil {
		return c.dataRefused(q, id, err)
	}
	d, err := c.svc.Data.PutData(q.r.Context(), q.actor, id, appdata.PutDataInput{Body: body})
	if err != nil {
		return c.dataRefused(q, id, err)
	}
	return c.redirect(q, Prefix+"/profiles/"+url.PathEscape(id)+"/data",
		fmt.Sprintf("Browser data stored: %s, sha256 %s.", humanBytes(d.Size), d.SHA256[:12]))
}

func (c *Console) dataDownload(q *request) error {
	id := mux.Vars(q.r)["id"]
	dl, err := c.svc.Data.Data(q.r.Context(), q.actor, id)
	if err != nil {
		return err
	}
	defer dl.Body.Close()
	h := q.w.Header()
	h.Set("Content-Type", "application/gzip")
	h.Set("Content-Length", strconv.FormatInt(dl.Data.Size, 10))
	h.Set("Content-Disposition", `attachment; filename="`+id+`.tar.gz"`)
	h.Set("ETag", `"`+dl.Data.SHA256+`"`)
	// The archive holds the signed-in sessions of the profile's accounts.
	h.Set("Cache-Control", "private, no-store")
	q.w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(q.w, dl.Body); err != nil {
		// The status is sent; the browser sees a body shorter than its
		// Content-Length, and the log says why.
		httpapi.RequestLogger(q.r.Context()).Warn("console browser data download cut short: " + err.Error())
	}
	return nil
}

func (c *Console) dataDeleteForm(q *request) error {
	p, err := c.svc.Profiles.Get(q.r.Context(), q.actor, mux.Vars(q.r)["id"])
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "data_delete", "Delete the browser data of "+p.Name, c.dataPageOf(p))
}

func (c *Console) dataDelete(q *request) error {
	id := mux.Vars(q.r)["id"]
	if _, err := form(q); err != nil {
		return err
	}
	if err := c.svc.Data.DeleteData(q.r.Context(), q.actor, id); err != nil {
		return c.dataRefused(q, id, err)
	}
	return c.redirect(q, Prefix+"/profiles/"+url.PathEscape(id)+"/data", "Browser data and cookies deleted.")
}

func (c *Console) cookiesExport(q *request) error {
	id := mux.Vars(q.r)["id"]
	cs, err := c.svc.Data.Cookies(q.r.Context(), q.actor, id)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(httpapi.CookieDTOs(cs), "", "  ")
	if err != nil {
		return err
	}
	h := q.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Disposition", `attachment; filename="`+id+`-cookies.json"`)
	h.Set("Cache-Control", "private, no-store")
	q.w.WriteHeader(http.StatusOK)
	_, _ = q.w.Write(append(b, '\n'))
	return nil
}

// readCookies reads a cookie file: a JSON list as the export writes it
// (and the API reads it), or a Netscape cookies.txt.
func readCookies(r io.Reader) ([]browserdata.Cookie, error) {
	raw, err := io.ReadAll(io.LimitReader(r, maxCookiesFile+1))
	if err != nil {
		return nil, domain.BadRequest("the cookie file could not be read")
	}
	if len(raw) > maxCookiesFile {
		return nil, fmt.Errorf("%w: the cookie file exceeds %d bytes", browserdata.ErrTooLarge, maxCookiesFile)
	}
	trimmed := bytes.TrimLeft(raw, " \t\r\n\ufeff")
	if !bytes.HasPrefix(trimmed, []byte("[")) {
		return browserdata.ParseNetscape(bytes.NewReader(raw), maxCookiesFile)
	}
	var in []httpapi.CookieDTO
	if err := jsonv2.Unmarshal(trimmed, &in, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, domain.Invalid("cookies", "the file is not a JSON list of cookies with name, value, domain, path, expires, httpOnly, secure and sameSite, as the export writes")
	}
	return httpapi.CookiesOf(in)
}

func (c *Console) cookiesImport(q *request) error {
	id := mux.Vars(q.r)["id"]
	if _, err := c.svc.Profiles.Get(q.r.Context(), q.actor, id); err != nil {
		return err
	}
	if err := q.actor.Require(team.ActWrite); err != nil {
		return err
	}
	body, err := uploadedFile(q, "cookies", maxCookiesFile+dataUploadSlack)
	if err != nil {
		return c.dataRefused(q, id, err)
	}
	cs, err := readCookies(body)
	if err != nil {
		return c.dataRefused(q, id, err)
	}
	stored, err := c.svc.Data.PutCookies(q.r.Context(), q.actor, id, cs)
	if err != nil {
		return c.dataRefused(q, id, err)
	}
	var msg string
	switch len(stored) {
	case 0:
		msg = "The file held no cookies: the profile's cookies are removed."
	case 1:
		msg = "1 cookie stored."
	default:
		msg = fmt.Sprintf("%d cookies stored.", len(stored))
	}
	return c.redirect(q, Prefix+"/profiles/"+url.PathEscape(id)+"/data", msg)
}

// snapshotListPage is a page of a profile's snapshots.
type snapshotListPage struct {
	Profile profile.Profile
	Items   []snapshot.Snapshot
	Next    string
	// Label is the create form's label as sent, shown again on refusal.
	Label string
}

func (c *Console) snapshotPage(q *request, id string) (snapshotListPage, error) {
	p, err := c.svc.Profiles.Get(q.r.Context(), q.actor, id)
	if err != nil {
		return snapshotListPage{}, err
	}
	page, err := c.svc.Snapshots.List(q.r.Context(), q.actor, id, snapshots.ListInput{Cursor: q.r.URL.Query().Get("cursor"), Limit: 25})
	if err != nil {
		return snapshotListPage{}, err
	}
	out := snapshotListPage{Profile: p, Items: page.Items}
	if page.NextCursor != "" {
		out.Next = Prefix + "/profiles/" + url.PathEscape(id) + "/snapshots?" + url.Values{"cursor": {page.NextCursor}}.Encode()
	}
	return out, nil
}

func (c *Console) snapshotList(q *request) error {
	data, err := c.snapshotPage(q, mux.Vars(q.r)["id"])
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "snapshots", "Time machine of "+data.Profile.Name, data)
}

func (c *Console) snapshotCreate(q *request) error {
	id := mux.Vars(q.r)["id"]
	v, err := form(q)
	if err != nil {
		return err
	}
	sn, err := c.svc.Snapshots.Create(q.r.Context(), q.actor, id, v.Get("label"))
	if err != nil {
		if !domain.IsKind(err, domain.KindValidation) {
			return err
		}
		data, perr := c.snapshotPage(q, id)
		if perr != nil {
			return perr
		}
		data.Label = v.Get("label")
		return c.renderWith(q, 0, "snapshots", "Time machine of "+data.Profile.Name, data, err)
	}
	msg := "Snapshot taken."
	if sn.Label != "" {
		msg = "Snapshot " + strconv.Quote(sn.Label) + " taken."
	}
	return c.redirect(q, Prefix+"/profiles/"+url.PathEscape(id)+"/snapshots", msg)
}

// snapshotChange is one field a restore changes: its value now and the
// snapshot's.
type snapshotChange struct {
	Field, Now, Then string
}

// restorePage is what a restore of the snapshot would change.
type restorePage struct {
	Profile  profile.Profile
	Snapshot snapshot.Snapshot
	Changes  []snapshotChange
}

func (c *Console) restorePageOf(q *request) (restorePage, error) {
	vars := mux.Vars(q.r)
	p, err := c.svc.Profiles.Get(q.r.Context(), q.actor, vars["id"])
	if err != nil {
		return restorePage{}, err
	}
	sn, err := c.svc.Snapshots.Get(q.r.Context(), q.actor, p.ID, vars["snapshotId"])
	if err != nil {
		return restorePage{}, err
	}
	return restorePage{Profile: p, Snapshot: sn, Changes: restoreChanges(p, sn)}, nil
}

// restoreChanges lists the fields of cur that a restore of sn changes.
func restoreChanges(cur profile.Profile, sn snapshot.Snapshot) []snapshotChange {
	st := sn.Settings
	var out []snapshotChange
	add := func(field, now, then string) {
		if now != then {
			out = append(out, snapshotChange{field, now, then})
		}
	}
	add("Name", cur.Name, st.Name)
	add("Template", cur.TemplateID, st.TemplateID)
	a, b := cur.Fingerprint, st.Fingerprint
	add("User agent", a.UserAgent, b.UserAgent)
	add("Platform", a.Platform, b.Platform)
	add("Locale", a.Locale, b.Locale)
	add("Time zone", a.Timezone, b.Timezone)
	add("Screen", screenOf(a.Screen), screenOf(b.Screen))
	if !sameDevice(a, b) {
		out = append(out, snapshotChange{"Other device details", "this device (hardware, languages, WebGL, fonts, noise)", "the snapshot's device"})
	}
	// The proxy is restored by its id; how it looks may have changed since.
	if cur.ProxyID != st.ProxyID {
		out = append(out, snapshotChange{"Proxy", proxyOf(cur.ProxyID, cur.Proxy), proxyOf(st.ProxyID, st.Proxy)})
	}
	add("Tags", listOf(cur.Tags), listOf(st.Tags))
	add("Notes", textOf(cur.Notes), textOf(st.Notes))
	var curData *profile.Content
	if cur.Data != nil {
		curData = &cur.Data.Content
	}
	add("Browser data", contentOf(curData), contentOf(sn.Data))
	add("Cookies", contentOf(cur.Cookies), contentOf(sn.Cookies))
	return out
}

func screenOf(s profile.Screen) string { return fmt.Sprintf("%d×%d", s.Width, s.Height) }

// sameDevice compares what the summary fields leave out of two
// fingerprints: an empty list is no list.
func sameDevice(a, b profile.Fingerprint) bool {
	if !slices.Equal(a.Fonts, b.Fonts) || !slices.Equal(a.Navigator.Languages, b.Navigator.Languages) {
		return false
	}
	strip := func(fp profile.Fingerprint) profile.Fingerprint {
		fp.UserAgent, fp.Platform, fp.Locale, fp.Timezone = "", "", "", ""
		fp.Screen.Width, fp.Screen.Height = 0, 0
		fp.Fonts, fp.Navigator.Languages = nil, nil
		return fp
	}
	a, b = strip(a), strip(b)
	return a.Screen == b.Screen && a.Navigator.HardwareConcurrency == b.Navigator.HardwareConcurrency &&
		a.Navigator.DeviceMemory == b.Navigator.DeviceMemory && a.Navigator.MaxTouchPoints == b.Navigator.MaxTouchPoints &&
		a.ClientHints == b.ClientHints && a.Window == b.Window && a.WebGL == b.WebGL &&
		a.MediaDevices == b.MediaDevices && a.WebRTC == b.WebRTC && a.NoiseSeed == b.NoiseSeed
}

func proxyOf(id string, ref *profile.ProxyRef) string {
	switch {
	case ref != nil:
		return fmt.Sprintf("%s://%s:%d (%s)", ref.Type, ref.Host, ref.Port, ref.ID)
	case id != "":
		return id
	}
	return "none"
}

func listOf(tags []string) string {
	if len(tags) == 0 {
		return "none"
	}
	return strings.Join(tags, ", ")
}

func textOf(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func contentOf(c *profile.Content) string {
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%s, sha256 %s", humanBytes(c.Size), c.SHA256[:min(12, len(c.SHA256))])
}

func (c *Console) snapshotRestoreForm(q *request) error {
	data, err := c.restorePageOf(q)
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "snapshots_restore", "Restore a snapshot of "+data.Profile.Name, data)
}

func (c *Console) snapshotRestore(q *request) error {
	vars := mux.Vars(q.r)
	id, sid := vars["id"], vars["snapshotId"]
	if _, err := form(q); err != nil {
		return err
	}
	if _, err := c.svc.Snapshots.Restore(q.r.Context(), q.actor, id, sid); err != nil {
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindConflict {
			return err
		}
		data, perr := c.restorePageOf(q)
		if perr != nil {
			return perr
		}
		if data.Profile.Session != nil {
			err = &domain.Error{Kind: domain.KindConflict, Message: "The profile is running, so it cannot be restored: release it first, then restore (" + de.Message + ").", Err: de}
		}
		return c.renderWith(q, 0, "snapshots_restore", "Restore a snapshot of "+data.Profile.Name, data, err)
	}
	return c.redirect(q, Prefix+"/profiles/"+url.PathEscape(id)+"/snapshots",
		"Snapshot restored. The state before it was kept as an automatic snapshot: restore that one to undo.")
}

func (c *Console) snapshotDeleteForm(q *request) error {
	data, err := c.restorePageOf(q)
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "snapshots_delete", "Delete a snapshot of "+data.Profile.Name, data)
}

func (c *Console) snapshotDelete(q *request) error {
	vars := mux.Vars(q.r)
	if _, err := form(q); err != nil {
		return err
	}
	if err := c.svc.Snapshots.Delete(q.r.Context(), q.actor, vars["id"], vars["snapshotId"]); err != nil {
		return err
	}
	return c.redirect(q, Prefix+"/profiles/"+url.PathEscape(vars["id"])+"/snapshots", "Snapshot deleted.")
}
