package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/application/snapshots"
	"github.com/profilesvc/profilesvc/domain/snapshot"
)

// SnapshotHandlers serves a profile's snapshots (the time machine).
type SnapshotHandlers struct {
	svc *snapshots.Service
}

// NewSnapshotHandlers returns the snapshot endpoints of svc.
func NewSnapshotHandlers(svc *snapshots.Service) *SnapshotHandlers {
	return &SnapshotHandlers{svc: svc}
}

// Routes lists the endpoints.
func (h *SnapshotHandlers) Routes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/api/v1/time-machine/{profileId}/snapshots", Handler: h.listSnapshots, Name: "snapshots.list"},
		{Method: http.MethodPost, Path: "/api/v1/time-machine/{profileId}/snapshots", Handler: h.createSnapshot, Name: "snapshots.create"},
		{Method: http.MethodGet, Path: "/api/v1/time-machine/{profileId}/snapshots/{snapshotId}", Handler: h.getSnapshot, Name: "snapshots.read"},
		{Method: http.MethodDelete, Path: "/api/v1/time-machine/{profileId}/snapshots/{snapshotId}", Handler: h.deleteSnapshot, Name: "snapshots.delete"},
		{Method: http.MethodPost, Path: "/api/v1/time-machine/{profileId}/restore/{snapshotId}", Handler: h.restore, Name: "snapshots.restore"},
	}
}

type snapshotContentDTO struct {
	SizeBytes int64  `json:"sizeBytes"`
	SHA256    string `json:"sha256"`
}

type snapshotProfileDTO struct {
	Name        string         `json:"name"`
	TemplateID  string         `json:"templateId"`
	Fingerprint fingerprintDTO `json:"fingerprint"`
	Proxy       *proxyRefDTO   `json:"proxy"`
	Tags        []string       `json:"tags"`
	Notes       string         `json:"notes"`
}

type snapshotDTO struct {
	ID        string              `json:"id"`
	ProfileID string              `json:"profileId"`
	Label     string              `json:"label"`
	Kind      string              `json:"kind"`
	Profile   snapshotProfileDTO  `json:"profile"`
	Data      *snapshotContentDTO `json:"data"`
	CreatedAt int64               `json:"createdAt"`
}

func toSnapshotDTO(s snapshot.Snapshot) snapshotDTO {
	st := s.Settings
	d := snapshotDTO{
		ID: s.ID, ProfileID: s.ProfileID, Label: s.Label, Kind: string(s.Kind),
		Profile: snapshotProfileDTO{
			Name: st.Name, TemplateID: st.TemplateID,
			Fingerprint: toFingerprintDTO(st.Fingerprint),
			Tags:        st.Tags, Notes: st.Notes,
		},
		CreatedAt: s.CreatedAt.UnixMilli(),
	}
	if d.Profile.Tags == nil {
		d.Profile.Tags = []string{}
	}
	switch {
	case st.Proxy != nil:
		d.Profile.Proxy = &proxyRefDTO{ID: st.Proxy.ID, Type: st.Proxy.Type, Host: st.Proxy.Host, Port: st.Proxy.Port}
	case st.ProxyID != "":
		d.Profile.Proxy = &proxyRefDTO{ID: st.ProxyID}
	}
	if s.Data != nil {
		d.Data = &snapshotContentDTO{SizeBytes: s.Data.Size, SHA256: s.Data.SHA256}
	}
	return d
}

func (h *SnapshotHandlers) listSnapshots(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := h.svc.List(r.Context(), actorFrom(r.Context()), mux.Vars(r)["profileId"], snapshots.ListInput{Cursor: cursor, Limit: limit})
	if err != nil {
		return err
	}
	out := make([]snapshotDTO, 0, len(page.Items))
	for _, s := range page.Items {
		out = append(out, toSnapshotDTO(s))
	}
	writeList(w, out, page.NextCursor, page.Limit)
	return nil
}

type createSnapshotRequest struct {
	Label string `json:"label"`
}

func (createSnapshotRequest) readOnlyFields() []string {
	return []string{"kind", "profileId", "profile", "data"}
}

func (h *SnapshotHandlers) createSnapshot(w http.ResponseWriter, r *http.Request) error {
	var in createSnapshotRequest
	if err := decodeOptionalJSON(w, r, &in); err != nil {
		return err
	}
	s, err := h.svc.Create(r.Context(), actorFrom(r.Context()), mux.Vars(r)["profileId"], in.Label)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toSnapshotDTO(s))
	return nil
}

func (h *SnapshotHandlers) getSnapshot(w http.ResponseWriter, r *http.Request) error {
	vars := mux.Vars(r)
	s, err := h.svc.Get(r.Context(), actorFrom(r.Context()), vars["profileId"], vars["snapshotId"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSnapshotDTO(s))
	return nil
}

func (h *SnapshotHandlers) deleteSnapshot(w http.ResponseWriter, r *http.Request) error {
	vars := mux.Vars(r)
	if err := h.svc.Delete(r.Context(), actorFrom(r.Context()), vars["profileId"], vars["snapshotId"]); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}

func (h *SnapshotHandlers) restore(w http.ResponseWriter, r *http.Request) error {
	var none struct{}
	if err := decodeOptionalJSON(w, r, &none); err != nil {
		return err
	}
	vars := mux.Vars(r)
	p, err := h.svc.Restore(r.Context(), actorFrom(r.Context()), vars["profileId"], vars["snapshotId"])
	if err != nil {
		return err
	}
	writeProfile(w, http.StatusOK, p)
	return nil
}
