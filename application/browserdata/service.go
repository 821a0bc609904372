package browserdata

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	domaindata "github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
)

// Profiles is what this module uses of the profiles module
// (profiles.Service has it).
type Profiles interface {
	// Stored returns the team's profile as stored now.
	Stored(ctx context.Context, teamID, id string) (profile.Profile, error)
	// Idle is Stored for a profile that must not run: a running one is
	// a conflict that names who holds it.
	Idle(ctx context.Context, teamID, id string) (profile.Profile, error)
	// ChangeIdle applies change to the idle profile in one unit of work,
	// under the rules of every change of a profile; a change that leaves
	// the version as it is writes nothing. during ends the conflict of a
	// profile that kept changing under every attempt.
	ChangeIdle(ctx context.Context, actor team.Actor, id, during string, change func(ctx context.Context, cur profile.Profile, now time.Time) (profile.Profile, error)) (profile.Profile, error)
}

// Service runs the browser data and cookie use cases.
type Service struct {
	profiles Profiles
	blobs    *Blobs
}

// New returns the service over the profiles module and the blobs.
func New(profiles Profiles, blobs *Blobs) *Service {
	return &Service{profiles: profiles, blobs: blobs}
}

// storing is the end of the conflict of a store that kept racing.
const storing = "its browser data were stored"

// DataMax is the largest browser-data archive accepted, in bytes.
func (s *Service) DataMax() int64 { return s.blobs.DataMax() }

// DataDownload is a profile's browser-data archive, streamed from the blob
// store; the caller closes Body.
type DataDownload struct {
	Data profile.Data
	Body io.ReadCloser
}

// Data opens the profile's browser-data archive. Reading it is for members
// and above: the data hold the sessions of the profile's accounts.
func (s *Service) Data(ctx context.Context, actor team.Actor, id string) (DataDownload, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return DataDownload{}, err
	}
	p, err := s.profiles.Stored(ctx, actor.TeamID, id)
	if err != nil {
		return DataDownload{}, err
	}
	if p.Data == nil {
		return DataDownload{}, domain.NotFound("browser data")
	}
	body, _, err := s.blobs.d.Blobs.Open(ctx, p.Data.SHA256)
	if err != nil {
		return DataDownload{}, fmt.Errorf("open browser data of %s: %w", p.ID, err)
	}
	return DataDownload{Data: *p.Data, Body: body}, nil
}

// PutDataInput is an upload of a browser-data archive.
type PutDataInput struct {
	// Body is the tar.gz as the client sends it.
	Body io.Reader
	// IfMatch, when set, is the sha256 the profile's data must have now,
	// or "*" for any data: a profile without data does not match.
	IfMatch *string
}

// PutData stores an archive as the profile's browser data. The archive is
// checked and cleaned while it streams into the blob store: unsafe entries,
// names no filesystem holds and entries that clash are refused; only what
// browserdata.Kept keeps is stored (no caches, extensions, Local State),
// with Default/Preferences rewritten by browserdata.CleanPreferences. The
// profile points at it only once it is completely stored, so a failed or
// interrupted upload leaves the previous data as they were. Refused while
// the profile runs.
func (s *Service) PutData(ctx context.Context, actor team.Actor, id string, in PutDataInput) (profile.Data, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return profile.Data{}, err
	}
	// Refuse early what the final check would refuse, before a long upload.
	cur, err := s.profiles.Idle(ctx, actor.TeamID, id)
	if err != nil {
		return profile.Data{}, err
	}
	if err := dataMatches(cur, in.IfMatch); err != nil {
		return profile.Data{}, err
	}
	var out profile.Profile
	err = s.blobs.Upload(ctx, func(ctx context.Context) error {
		stored, err := s.blobs.PutArchive(ctx, in.Body)
		if err != nil {
			return err
		}
		out, err = s.setContent(ctx, actor, id, in.IfMatch, func(p profile.Profile, now time.Time) profile.Profile {
			if p.Data == nil || p.Data.SHA256 != stored.SHA256 {
				p.Data = &profile.Data{Content: profile.Content{SHA256: stored.SHA256, Size: stored.Size}, UpdatedAt: now.UTC()}
			}
			return p
		})
		return err
	})
	if err != nil {
		return profile.Data{}, err
	}
	return *out.Data, nil
}

// DeleteData removes the profile's browser data and cookies. Refused while
// the profile runs; deleting what is not there changes nothing.
func (s *Service) DeleteData(ctx context.Context, actor team.Actor, id string) error {
	if err := actor.Require(team.ActWrite); err != nil {
		return err
	}
	_, err := s.setContent(ctx, actor, id, nil, func(p profile.Profile, _ time.Time) profile.Profile {
		p.Data, p.Cookies = nil, nil
		return p
	})
	return err
}

// Cookies returns the profile's cookies (none: an empty list). Reading them
// is for members and above, as the browser data.
func (s *Service) Cookies(ctx context.Context, actor team.Actor, id string) ([]domaindata.Cookie, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return nil, err
	}
	p, err := s.profiles.Stored(ctx, actor.TeamID, id)
	if err != nil {
		return nil, err
	}
	if p.Cookies == nil {
		return []domaindata.Cookie{}, nil
	}
	return s.blobs.ReadCookies(ctx, *p.Cookies)
}

// PutCookies replaces the profile's cookies with cs, checked and
// normalised, and returns them as stored. An empty list removes them.
// Refused while the profile runs: its browser owns them then.
func (s *Service) PutCookies(ctx context.Context, actor team.Actor, id string, cs []domaindata.Cookie) ([]domaindata.Cookie, error) {
	if err := actor.Require(team.ActWrite); err != nil {
		return nil, err
	}
	cs, err := domaindata.CheckCookies(cs)
	if err != nil {
		return nil, err
	}
	if _, err := s.profiles.Idle(ctx, actor.TeamID, id); err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		_, err := s.setContent(ctx, actor, id, nil, func(p profile.Profile, _ time.Time) profile.Profile {
			p.Cookies = nil
			return p
		})
		return []domaindata.Cookie{}, err
	}
	err = s.blobs.Upload(ctx, func(ctx context.Context) error {
		info, err := s.blobs.PutCookies(ctx, cs)
		if err != nil {
			return err
		}
		_, err = s.setContent(ctx, actor, id, nil, func(p profile.Profile, _ time.Time) profile.Profile {
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

// setContent applies change to the idle profile's data and cookies in one
// unit and returns the profile: the version rises, profile.updated is
// emitted, and the blobs the profile no longer refers to become candidates
// for collection. A change that changes nothing writes nothing. ifMatch is
// checked against the data as they are in the unit; a concurrent change of
// the profile's settings is not a mismatch, the unit runs again.
func (s *Service) setContent(ctx context.Context, actor team.Actor, id string, ifMatch *string, change func(profile.Profile, time.Time) profile.Profile) (profile.Profile, error) {
	return s.profiles.ChangeIdle(ctx, actor, id, storing, func(_ context.Context, cur profile.Profile, now time.Time) (profile.Profile, error) {
		if err := dataMatches(cur, ifMatch); err != nil {
			return profile.Profile{}, err
		}
		next := change(cur, now)
		if sameContent(cur, next) {
			return cur, nil
		}
		next.Version, next.UpdatedAt = cur.Version+1, now.UTC()
		return next, nil
	})
}

// dataMatches checks If-Match against the profile's data.
func dataMatches(p profile.Profile, ifMatch *string) error {
	if ifMatch == nil {
		return nil
	}
	cur := ""
	if p.Data != nil {
		cur = p.Data.SHA256
	}
	if *ifMatch == "*" && cur != "" {
		return nil
	}
	if *ifMatch != cur {
		if cur == "" {
			return domain.PreconditionFailed("If-Match does not match: the profile has no browser data")
		}
		return domain.PreconditionFailed(fmt.Sprintf("If-Match does not match the profile's browser data %q; read them again and retry", cur))
	}
	return nil
}

// sameContent reports whether two states of a profile refer to the same
// data and cookies.
func sameContent(a, b profile.Profile) bool {
	return contentSum(a.Data) == contentSum(b.Data) && cookiesSum(a.Cookies) == cookiesSum(b.Cookies)
}

func contentSum(d *profile.Data) string {
	if d == nil {
		return ""
	}
	return d.SHA256
}

func cookiesSum(c *profile.Content) string {
	if c == nil {
		return ""
	}
	return c.SHA256
}
