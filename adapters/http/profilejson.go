package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain/profile"
)

// Profiles are what the service answers most, alone or by the page, and
// encoding/json spent more CPU on them than the database did reading them.
// appendProfile writes a profileDTO as encoding/json would, byte for byte
// (a test holds the two together), without reflection.

// profileBuffers keeps the buffers of profile answers between requests.
var profileBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// maxPooledBuffer is the largest buffer kept for the next answer; a larger
// one (a long page) goes to the garbage collector.
const maxPooledBuffer = 256 << 10

// writeProfileBody answers status with the success envelope around d.
func writeProfileBody(w http.ResponseWriter, status int, d *profileDTO) {
	writeAppended(w, status, func(b []byte) []byte {
		b = append(b, `{"success":true,"data":`...)
		return append(appendProfile(b, d), "}\n"...)
	})
}

// appendProfileList appends the body writeList answers for a page of
// items.
func appendProfileList(b []byte, items []profileDTO, nextCursor string, limit int) []byte {
	b = append(b, `{"success":true,"data":[`...)
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendProfile(b, &items[i])
	}
	b = append(b, `],"meta":{"nextCursor":`...)
	if nextCursor == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, nextCursor)
	}
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(limit), 10)
	return append(b, "}}\n"...)
}

// renderProfilePage is the body writeProfileList answers for page, in a
// slice of its own: the service may keep it (ListRendered).
func renderProfilePage(page paging.Page[profile.Profile]) []byte {
	items := make([]profileDTO, 0, len(page.Items))
	for _, p := range page.Items {
		items = append(items, toProfileDTO(p))
	}
	bp := profileBuffers.Get().(*[]byte)
	b := appendProfileList((*bp)[:0], items, page.NextCursor, page.Limit)
	out := bytes.Clone(b)
	if cap(b) <= maxPooledBuffer {
		*bp = b
		profileBuffers.Put(bp)
	}
	return out
}

// writeAppended answers status with the JSON body fill appends, with the
// headers writeBody sets.
func writeAppended(w http.ResponseWriter, status int, fill func([]byte) []byte) {
	bp := profileBuffers.Get().(*[]byte)
	b := fill((*bp)[:0])
	writeRendered(w, status, b)
	if cap(b) <= maxPooledBuffer {
		*bp = b
		profileBuffers.Put(bp)
	}
}

// writeRendered answers status with the JSON body b, with the headers
// writeBody sets.
func writeRendered(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func appendProfile(b []byte, d *profileDTO) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, d.ID)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, d.Name)
	b = append(b, `,"templateId":`...)
	b = appendJSONString(b, d.TemplateID)
	b = append(b, `,"browser":`...)
	b = appendJSONString(b, d.Browser)
	fp := &d.Fingerprint
	b = append(b, `,"fingerprint":{"userAgent":`...)
	b = appendJSONString(b, fp.UserAgent)
	b = append(b, `,"platform":`...)
	b = appendJSONString(b, fp.Platform)
	b = append(b, `,"locale":`...)
	b = appendJSONString(b, fp.Locale)
	b = append(b, `,"timezone":`...)
	b = appendJSONString(b, fp.Timezone)
	b = append(b, `,"screen":{"width":`...)
	b = strconv.AppendInt(b, int64(fp.Screen.Width), 10)
	b = append(b, `,"height":`...)
	b = strconv.AppendInt(b, int64(fp.Screen.Height), 10)
	b = append(b, `}},"proxy":`...)
	if px := d.Proxy; px == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"id":`...)
		b = appendJSONString(b, px.ID)
		if px.Type != "" {
			b = append(b, `,"type":`...)
			b = appendJSONString(b, px.Type)
		}
		if px.Host != "" {
			b = append(b, `,"host":`...)
			b = appendJSONString(b, px.Host)
		}
		if px.Port != 0 {
			b = append(b, `,"port":`...)
			b = strconv.AppendInt(b, int64(px.Port), 10)
		}
		b = append(b, '}')
	}
	b = append(b, `,"tags":`...)
	if d.Tags == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, t := range d.Tags {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, t)
		}
		b = append(b, ']')
	}
	b = append(b, `,"notes":`...)
	b = appendJSONString(b, d.Notes)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, d.Status)
	b = append(b, `,"session":`...)
	if s := d.Session; s == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"id":`...)
		b = appendJSONString(b, s.ID)
		b = append(b, `,"startedAt":`...)
		b = strconv.AppendInt(b, s.StartedAt, 10)
		b = append(b, `,"expiresAt":`...)
		b = strconv.AppendInt(b, s.ExpiresAt, 10)
		b = append(b, `,"launchedBy":`...)
		b = appendJSONString(b, s.LaunchedBy)
		b = append(b, `,"headless":`...)
		b = strconv.AppendBool(b, s.Headless)
		b = append(b, `,"cdpUrl":`...)
		if s.CDPURL == nil {
			b = append(b, "null"...)
		} else {
			b = appendJSONString(b, *s.CDPURL)
		}
		b = append(b, '}')
	}
	b = append(b, `,"data":`...)
	if dd := d.Data; dd == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"sizeBytes":`...)
		b = strconv.AppendInt(b, dd.SizeBytes, 10)
		b = append(b, `,"sha256":`...)
		b = appendJSONString(b, dd.SHA256)
		b = append(b, `,"updatedAt":`...)
		b = strconv.AppendInt(b, dd.UpdatedAt, 10)
		b = append(b, '}')
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(d.Version), 10)
	b = append(b, `,"createdAt":`...)
	b = strconv.AppendInt(b, d.CreatedAt, 10)
	b = append(b, `,"updatedAt":`...)
	b = strconv.AppendInt(b, d.UpdatedAt, 10)
	return append(b, '}')
}

// appendJSONString appends s quoted. The plain case (printable ASCII that
// encoding/json leaves as it is) is copied; anything else is left to
// encoding/json, so escapes are exactly its own.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			raw, _ := json.Marshal(s) // a string always encodes
			return append(b, raw...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
