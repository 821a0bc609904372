package profiles

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

// storedCookie is how a cookie is kept in its blob: the same JSON shape
// whatever the transport, so that equal cookie lists share one blob.
type storedCookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain"`
	Path     string  `json:"path"`
	Expires  float64 `json:"expires"`
	HTTPOnly bool    `json:"httpOnly"`
	Secure   bool    `json:"secure"`
	SameSite string  `json:"sameSite"`
}

// maxCookiesBlob bounds a stored cookie list when it is read back: the most
// cookies of the largest size, with room for the JSON around them.
const maxCookiesBlob = browserdata.MaxCookies * 5 << 10

// Cookies returns the profile's cookies (none: an empty list). Reading them
// is for members and above, as the browser data.
func (s *Service) Cookies(ctx context.Context, actor team.Actor, id string) ([]browserdata.Cookie, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return nil, err
	}
	p, err := s.d.Profiles.ByID(ctx, actor.TeamID, id)
	if err != nil {
		return nil, err
	}
	if p.Cookies == nil {
		return []browserdata.Cookie{}, nil
	}
	return s.readCookies(ctx, *p.Cookies)
}

func (s *Service) readCookies(ctx context.Context, c profile.Content) ([]browserdata.Cookie, error) {
	body, _, err := s.d.Blobs.Open(ctx, c.SHA256)
	if err != nil {
		return nil, fmt.Errorf("open cookies %s: %w", c.SHA256, err)
	}
	defer body.Close()
	var stored []storedCookie
	if err := json.NewDecoder(io.LimitReader(body, maxCookiesBlob)).Decode(&stored); err != nil {
		return nil, fmt.Errorf("read cookies %s: %w", c.SHA256, err)
	}
	out := make([]browserdata.Cookie, len(stored))
	for i, sc := range stored {
		out[i] = browserdata.Cookie{
			Name: sc.Name, Value: sc.Value, Domain: sc.Domain, Path: sc.Path, Expires: sc.Expires,
			HTTPOnly: sc.HTTPOnly, Secure: sc.Secure, SameSite: browserdata.SameSite(sc.SameSite),
		}
	}
	return out, nil
}

// PutCookies replaces the profile's cookies with cs, checked and
// normalised, and returns them as stored. An empty list removes them.
// Refused while the profile runs: its browser owns them then.
func (s *Service) PutCookies(ctx context.Context, actor team.Actor, id string, cs []browserdata.Cookie) ([]browserdata.Cookie, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return nil, err
	}
	cs, err := browserdata.CheckCookies(cs)
	if err != nil {
		return nil, err
	}
	cur, err := s.d.Profiles.ByID(ctx, actor.TeamID, id)
	if err != nil {
		return nil, err
	}
	if cur.Session != nil {
		return nil, s.running(ctx, cur)
	}
	if len(cs) == 0 {
		_, err := s.setContent(ctx, actor, id, nil, func(p profile.Profile, _ time.Time) profile.Profile {
			p.Cookies = nil
			return p
		})
		return []browserdata.Cookie{}, err
	}
	raw, err := encodeCookies(cs)
	if err != nil {
		return nil, err
	}
	err = s.upload(ctx, func(ctx context.Context) (ports.BlobInfo, error) {
		return s.d.Blobs.Put(ctx, bytes.NewReader(raw), int64(len(raw)))
	}, func(ctx context.Context, info ports.BlobInfo) error {
		_, err := s.setContent(ctx, actor, id, nil, func(p profile.Profile, _ time.Time) profile.Profile {
			p.Cookies = &profile.Content{SHA256: info.SHA256, Size: info.Size}
			return p
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return cs, nil
}
