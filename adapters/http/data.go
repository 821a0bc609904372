package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	appbrowserdata "github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/profile"
)

// maxCookiesBody bounds a cookie list as sent: MaxCookies cookies of a few
// hundred bytes each, which is more than the 1 MiB other bodies get.
const maxCookiesBody = 8 << 20

// DataHandlers serves a profile's browser data and its cookies.
type DataHandlers struct {
	svc *appbrowserdata.Service
	// profiles reads the profile whose data an If-Match list names.
	profiles *profiles.Service
	// uploadTimeout is how long a client may take to send an archive; the
	// server's read timeout, meant for small bodies, is lifted to it.
	uploadTimeout time.Duration
}

// NewDataHandlers returns the browser data and cookie endpoints of svc.
func NewDataHandlers(svc *appbrowserdata.Service, profiles *profiles.Service, uploadTimeout time.Duration) *DataHandlers {
	return &DataHandlers{svc: svc, profiles: profiles, uploadTimeout: uploadTimeout}
}

// Routes lists the endpoints.
func (h *DataHandlers) Routes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/api/v1/profiles/{id}/data", Handler: h.getData, Name: "profiles.data.read"},
		{Method: http.MethodPut, Path: "/api/v1/profiles/{id}/data", Handler: h.putData, Name: "profiles.data.write"},
		{Method: http.MethodDelete, Path: "/api/v1/profiles/{id}/data", Handler: h.deleteData, Name: "profiles.data.delete"},
		{Method: http.MethodGet, Path: "/api/v1/profiles/{id}/cookies", Handler: h.getCookies, Name: "profiles.cookies.read"},
		{Method: http.MethodPut, Path: "/api/v1/profiles/{id}/cookies", Handler: h.putCookies, Name: "profiles.cookies.write"},
	}
}

type dataDTO struct {
	SizeBytes int64  `json:"sizeBytes"`
	SHA256    string `json:"sha256"`
	UpdatedAt int64  `json:"updatedAt"`
}

func toDataDTO(d profile.Data) dataDTO {
	return dataDTO{SizeBytes: d.Size, SHA256: d.SHA256, UpdatedAt: d.UpdatedAt.UnixMilli()}
}

// dataETag is the strong ETag of an archive: its sha256, quoted.
func dataETag(sum string) string { return `"` + sum + `"` }

func (h *DataHandlers) getData(w http.ResponseWriter, r *http.Request) error {
	dl, err := h.svc.Data(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	defer dl.Body.Close()
	hdr := w.Header()
	hdr.Set("ETag", dataETag(dl.Data.SHA256))
	// The archive holds the signed-in sessions of the profile's accounts.
	hdr.Set("Cache-Control", "private, no-store")
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagListHas(inm, dl.Data.SHA256) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	hdr.Set("Content-Type", "application/gzip")
	hdr.Set("Content-Length", strconv.FormatInt(dl.Data.Size, 10))
	hdr.Set("Content-Disposition", `attachment; filename="`+mux.Vars(r)["id"]+`.tar.gz"`)
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, dl.Body); err != nil {
		// The status is sent; the client sees a body shorter than its
		// Content-Length, and the log says why.
		responseLogger(w).Warn("browser data download cut short: " + err.Error())
	}
	return nil
}

// etagListHas reports whether an If-None-Match list names sum (or is "*").
func etagListHas(list, sum string) bool {
	for _, tag := range strings.Split(list, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" || strings.Trim(tag, `"`) == sum {
			return true
		}
	}
	return false
}

// archiveTypes are the content types an uploaded archive may carry.
var archiveTypes = []string{"application/gzip", "application/x-gzip", "application/octet-stream"}

func (h *DataHandlers) putData(w http.ResponseWriter, r *http.Request) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !slices.Contains(archiveTypes, mt) {
		return &transportError{kind: kindUnsupportedMediaType, message: "browser data must be sent as application/gzip (a tar.gz of the user-data directory)"}
	}
	match, err := h.dataIfMatch(r)
	if err != nil {
		return err
	}
	max := h.svc.DataMax()
	if r.ContentLength > max {
		return tooLarge(nil, max)
	}
	// Large archives take longer than the read timeout meant for JSON.
	if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.uploadTimeout)); err != nil {
		responseLogger(w).Warn("could not extend the read deadline of an upload: " + err.Error())
	}
	d, err := h.svc.PutData(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"], appbrowserdata.PutDataInput{Body: r.Body, IfMatch: match})
	if err != nil {
		return dataError(err, max)
	}
	w.Header().Set("ETag", dataETag(d.SHA256))
	writeJSON(w, http.StatusOK, toDataDTO(d))
	return nil
}

// noDataTag stands, in PutDataInput.IfMatch, for a list of which no tag
// can match: it is neither "*" nor a sha256, so PutData answers 412 once it
// has found the profile, after its 404 and 409, as RFC 9110 (section 13.2.1)
// orders them.
const noDataTag = "-"

// dataIfMatch reads If-Match for browser data (RFC 9110, section 13.1.1)
// as the one value PutData checks: "*", which requires that the profile
// has data; the sha256 of a listed strong tag (quoted as in the ETag, or
// bare as this API once asked); or noDataTag when no listed tag can match
// (a weak tag never does: If-Match compares strongly). Only a field that is
// neither "*" nor a list of entity tags is 400.
func (h *DataHandlers) dataIfMatch(r *http.Request) (*string, error) {
	field, err := parseIfMatch(r.Header.Values("If-Match"), isSHA256)
	if err != nil {
		return nil, domain.BadRequest(`If-Match must be "*" or entity tags such as the data's ETag ("<sha256>")`)
	}
	if !field.present {
		return nil, nil
	}
	if field.any {
		star := "*"
		return &star, nil
	}
	var sums []string
	for _, tag := range field.strong {
		if isSHA256(tag) {
			sums = append(sums, tag)
		}
	}
	switch len(sums) {
	case 0:
		none := noDataTag
		return &none, nil
	case 1:
		return &sums[0], nil
	}
	// PutData checks one value, in the unit that stores the data; of a
	// list, the one the data have now is the one that can match there.
	p, err := h.profiles.Get(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"])
	if err != nil {
		return nil, err
	}
	if p.Data != nil && slices.Contains(sums, p.Data.SHA256) {
		return &p.Data.SHA256, nil
	}
	return &sums[0], nil
}

// isSHA256 reports whether s is a sha256 as the data's ETag carries it.
func isSHA256(s string) bool {
	return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == ""
}

// ifMatchField is an If-Match field as RFC 9110 (section 13.1.1) reads it.
type ifMatchField struct {
	// present is false without the field, or with an empty list.
	present bool
	// any is "*": a current representation matches.
	any bool
	// strong are the opaque values of the listed strong tags. Weak tags
	// are left out: If-Match compares strongly, so they never match.
	strong []string
}

// errIfMatch is an If-Match that is neither "*" nor a list of entity tags.
var errIfMatch = errors.New("malformed If-Match")

// parseIfMatch reads the If-Match field lines: "*" or a comma-separated
// list of entity tags (W/"..." or "..."), empty elements ignored (RFC 9110,
// section 5.6.1). bare, when not nil, takes an element without quotes as
// the strong tag it spells, for clients of the rule this API had before.
func parseIfMatch(lines []string, bare func(string) bool) (ifMatchField, error) {
	var f ifMatchField
	s := strings.Join(lines, ",")
	if strings.Trim(s, " \t") == "*" {
		return ifMatchField{present: true, any: true}, nil
	}
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return f, nil
		}
		weak := strings.HasPrefix(s, "W/")
		if weak {
			s = s[2:]
		}
		var opaque string
		if strings.HasPrefix(s, `"`) {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return ifMatchField{}, errIfMatch
			}
			opaque, s = s[1:1+end], s[2+end:]
			for i := 0; i < len(opaque); i++ {
				// etagc: VCHAR but DQUOTE, or obs-text.
				if c := opaque[i]; c < 0x21 || c == 0x7f {
					return ifMatchField{}, errIfMatch
				}
			}
		} else {
			end := strings.IndexAny(s, " \t,")
			if end < 0 {
				end = len(s)
			}
			opaque, s = s[:end], s[end:]
			if weak || bare == nil || !bare(opaque) {
				return ifMatchField{}, errIfMatch
			}
		}
		f.present = true
		if !weak {
			f.strong = append(f.strong, opaque)
		}
		s = strings.TrimLeft(s, " \t")
		if s != "" && s[0] != ',' {
			return ifMatchField{}, errIfMatch
		}
	}
}

// dataError turns the size limits of an upload into 413.
func dataError(err error, max int64) error {
	if errors.Is(err, browserdata.ErrTooLarge) {
		return &transportError{
			kind:    kindPayloadTooLarge,
			message: fmt.Sprintf("browser data must not exceed %d bytes as sent nor %d bytes unpacked: %v", max, max*appbrowserdata.DataUnpackedFactor, err),
		}
	}
	return err
}

func (h *DataHandlers) deleteData(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.DeleteData(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"]); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}

// CookieDTO is Playwright's cookie shape: the API's cookie list, and the
// dashboard's cookie file.
type CookieDTO struct {
	Name     string   `json:"name"`
	Value    string   `json:"value"`
	Domain   string   `json:"domain"`
	Path     string   `json:"path"`
	Expires  *float64 `json:"expires"`
	HTTPOnly bool     `json:"httpOnly"`
	Secure   bool     `json:"secure"`
	SameSite string   `json:"sameSite"`
}

// CookieDTOs are cookies in Playwright's shape.
func CookieDTOs(cs []browserdata.Cookie) []CookieDTO {
	out := make([]CookieDTO, len(cs))
	for i, c := range cs {
		exp := c.Expires
		out[i] = CookieDTO{
			Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Expires: &exp,
			HTTPOnly: c.HTTPOnly, Secure: c.Secure, SameSite: string(c.SameSite),
		}
	}
	return out
}

// CookiesOf reads cookies sent in Playwright's shape: at most
// browserdata.MaxCookies, a missing expiry being a session cookie's (-1).
func CookiesOf(in []CookieDTO) ([]browserdata.Cookie, error) {
	if len(in) > browserdata.MaxCookies {
		return nil, domain.Invalid("cookies", fmt.Sprintf("at most %d cookies", browserdata.MaxCookies))
	}
	cs := make([]browserdata.Cookie, len(in))
	for i, c := range in {
		exp := -1.0
		if c.Expires != nil {
			exp = *c.Expires
		}
		cs[i] = browserdata.Cookie{
			Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Expires: exp,
			HTTPOnly: c.HTTPOnly, Secure: c.Secure, SameSite: browserdata.SameSite(c.SameSite),
		}
	}
	return cs, nil
}

// wantsText reports whether the client asks for cookies.txt: text/plain is
// acceptable and JSON is not preferred to it.
func wantsText(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "text/plain") && !strings.Contains(accept, "application/json")
}

func (h *DataHandlers) getCookies(w http.ResponseWriter, r *http.Request) error {
	cs, err := h.svc.Cookies(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "private, no-store")
	if wantsText(r) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		if err := browserdata.WriteNetscape(w, cs); err != nil {
			responseLogger(w).Warn("cookies.txt cut short: " + err.Error())
		}
		return nil
	}
	writeJSON(w, http.StatusOK, CookieDTOs(cs))
	return nil
}

func (h *DataHandlers) putCookies(w http.ResponseWriter, r *http.Request) error {
	var cs []browserdata.Cookie
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "text/plain" {
		body, err := readBodyUpTo(w, r, maxCookiesBody)
		if err != nil {
			return err
		}
		if cs, err = browserdata.ParseNetscape(bytes.NewReader(body), maxCookiesBody); err != nil {
			return err
		}
	} else {
		var in []CookieDTO
		if err := decodeJSONUpTo(w, r, &in, maxCookiesBody); err != nil {
			return err
		}
		var err error
		if cs, err = CookiesOf(in); err != nil {
			return err
		}
	}
	stored, err := h.svc.PutCookies(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"], cs)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, CookieDTOs(stored))
	return nil
}
