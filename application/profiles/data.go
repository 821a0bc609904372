package profiles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

// Bounds of an archive's contents besides its size. A profile's data are
// a few thousand files at most, while 200,000 entries let a 1.2 MB upload
// cost every launch half a minute and as many inodes: the bound is
// browserdata.MaxEntries (20,000), which a profile's data, caches left
// out, do not reach, and an archive past it is refused at the first entry
// over, the rest unread. Names are bounded by what a filesystem stores
// (browserdata.MaxNameLen).
const (
	dataMaxEntries = browserdata.MaxEntries
	dataMaxPathLen = browserdata.MaxNameLen
	// DataUnpackedFactor bounds the files an archive unpacks to, as a
	// multiple of the archive size limit: profile data compress a few
	// times, a gzip bomb by far more.
	DataUnpackedFactor = 4
)

// dataLimits are the Sanitize limits for the policy's archive size.
func (s *Service) dataLimits() browserdata.Limits {
	return browserdata.Limits{
		MaxUnpacked: s.d.Policy.DataMax * DataUnpackedFactor,
		MaxEntries:  dataMaxEntries,
		MaxPathLen:  dataMaxPathLen,
	}
}

// DataMax is the largest browser-data archive accepted, in bytes.
func (s *Service) DataMax() int64 { return s.d.Policy.DataMax }

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
	p, err := s.d.Profiles.ByID(ctx, actor.TeamID, id)
	if err != nil {
		return DataDownload{}, err
	}
	if p.Data == nil {
		return DataDownload{}, domain.NotFound("browser data")
	}
	body, _, err := s.d.Blobs.Open(ctx, p.Data.SHA256)
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
	cur, err := s.d.Profiles.ByID(ctx, actor.TeamID, id)
	if err != nil {
		return profile.Data{}, err
	}
	if cur.Session != nil {
		return profile.Data{}, s.running(ctx, cur)
	}
	if err := dataMatches(cur, in.IfMatch); err != nil {
		return profile.Data{}, err
	}
	var out profile.Profile
	err = s.upload(ctx, func(ctx context.Context) (ports.BlobInfo, error) {
		return s.storeArchive(ctx, in.Body)
	}, func(ctx context.Context, stored ports.BlobInfo) (err error) {
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

// storeArchive streams body through the sanitizer into the blob store.
func (s *Service) storeArchive(ctx context.Context, body io.Reader) (ports.BlobInfo, error) {
	limits := s.dataLimits()
	src := &limitedBody{r: body, left: s.d.Policy.DataMax}
	pr, pw := io.Pipe()
	sanitized := make(chan error, 1)
	go func() {
		_, err := browserdata.Sanitize(pw, src, limits)
		if errors.Is(err, errBodyTooLarge) {
			err = fmt.Errorf("%w: the archive exceeds %d bytes (PROFILE_DATA_MAX)", browserdata.ErrTooLarge, s.d.Policy.DataMax)
		}
		pw.CloseWithError(err)
		sanitized <- err
	}()
	// The cleaned archive is at most its files plus tar and gzip framing.
	info, err := s.d.Blobs.Put(ctx, pr, limits.MaxUnpacked+limits.MaxUnpacked/8+1<<20)
	pr.CloseWithError(errors.New("blob store stopped reading"))
	if serr := <-sanitized; serr != nil {
		return ports.BlobInfo{}, serr
	}
	if errors.Is(err, ports.ErrBlobTooLarge) {
		return ports.BlobInfo{}, fmt.Errorf("%w: %w", browserdata.ErrTooLarge, err)
	}
	if err != nil {
		return ports.BlobInfo{}, fmt.Errorf("store browser data: %w", err)
	}
	return info, nil
}

var errBodyTooLarge = errors.New("request body over the limit")

// limitedBody fails with errBodyTooLarge once more than left bytes come.
type limitedBody struct {
	r    io.Reader
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errBodyTooLarge
	}
	if err != nil && err != io.EOF {
		return n, &domain.Error{Kind: domain.KindBadRequest, Message: "the request body could not be read to its end", Err: err}
	}
	return n, err
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

// upload stores content in the blob store (put) and then runs the unit that
// refers to it (refer), registered as an upload in progress throughout.
func (s *Service) upload(ctx context.Context, put func(context.Context) (ports.BlobInfo, error), refer func(context.Context, ports.BlobInfo) error) error {
	return s.withUpload(ctx, func(ctx context.Context) error {
		stored, err := s.putBlob(ctx, put)
		if err != nil {
			return err
		}
		return refer(ctx, stored)
	})
}

// errVersionRace is a unit that lost a race with another writer of the
// profile and may run again.
var errVersionRace = errors.New("the profile changed during the unit")

// setContent applies change to the idle profile's data and cookies in one
// unit and returns the profile: the version rises, profile.updated is
// emitted, and the blobs the profile no longer refers to become candidates
// for collection. A change that changes nothing writes nothing. ifMatch is
// checked against the data as they are in the unit; a concurrent change of
// the profile's settings is not a mismatch, the unit runs again.
func (s *Service) setContent(ctx context.Context, actor team.Actor, id string, ifMatch *string, change func(profile.Profile, time.Time) profile.Profile) (profile.Profile, error) {
	var out profile.Profile
	var err error
	for range s.d.Policy.UpdateAttempts {
		err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
			cur, err := s.d.Profiles.ByID(ctx, actor.TeamID, id)
			if err != nil {
				return err
			}
			if cur.Session != nil {
				return s.running(ctx, cur)
			}
			if err := dataMatches(cur, ifMatch); err != nil {
				return err
			}
			now := s.d.Clock.Now()
			next := change(cur, now)
			if sameContent(cur, next) {
				out = s.withProxy(ctx, cur)
				return nil
			}
			next.Version, next.UpdatedAt = cur.Version+1, now.UTC()
			s.uncache(ctx, next.TeamID, next.ID)
			switch err := s.d.Profiles.UpdateIdle(ctx, next, cur.Version); {
			case errors.Is(err, profile.ErrRunning):
				return s.stillRunning(ctx, actor.TeamID, id)
			case domain.IsKind(err, domain.KindPreconditionFailed):
				return fmt.Errorf("%w: %w", errVersionRace, err)
			case err != nil:
				return err
			}
			if err := s.d.BlobRefs.Release(ctx, now, cur.Blobs()...); err != nil {
				return err
			}
			out = s.withProxy(ctx, next)
			return s.emit(ctx, next, event.ProfileUpdated, nil)
		})
		if !errors.Is(err, errVersionRace) {
			break
		}
	}
	if errors.Is(err, errVersionRace) {
		return profile.Profile{}, domain.Conflict("the profile kept changing while its browser data were stored; try again")
	}
	return out, err
}

// stillRunning reports the conflict of a profile launched during a unit
// that found it idle.
func (s *Service) stillRunning(ctx context.Context, teamID, id string) error {
	if p, err := s.d.Profiles.ByID(ctx, teamID, id); err == nil && p.Session != nil {
		return s.running(ctx, p)
	}
	return profile.ErrRunning
}

// sameContent reports whether two states of a profile refer to the same
// data and cookies.
func sameContent(a, b profile.Profile) bool {
	var ad, bd, ac, bc string
	if a.Data != nil {
		ad = a.Data.SHA256
	}
	if b.Data != nil {
		bd = b.Data.SHA256
	}
	if a.Cookies != nil {
		ac = a.Cookies.SHA256
	}
	if b.Cookies != nil {
		bc = b.Cookies.SHA256
	}
	return ad == bd && ac == bc
}
