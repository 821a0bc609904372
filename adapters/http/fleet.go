package httpapi

import (
	"net/http"

	"github.com/profilesvc/profilesvc/application/profiles"
)

// fleetDTO is the fleet as GET /api/v1/fleet shows it: numbers of
// instances, nothing of any team's sessions.
type fleetDTO struct {
	Capacity  int                `json:"capacity"`
	Running   int                `json:"running"`
	Free      int                `json:"free"`
	Instances []fleetInstanceDTO `json:"instances"`
}

type fleetInstanceDTO struct {
	ID        string `json:"id"`
	Capacity  int    `json:"capacity"`
	Running   int    `json:"running"`
	Draining  bool   `json:"draining"`
	Version   string `json:"version"`
	Engine    string `json:"engine"`
	StartedAt int64  `json:"startedAt"`
	SeenAt    int64  `json:"seenAt"`
}

func (h *ProfileHandlers) fleet(w http.ResponseWriter, r *http.Request) error {
	v, err := h.svc.Fleet(r.Context(), actorFrom(r.Context()))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toFleetDTO(v))
	return nil
}

func toFleetDTO(v profiles.FleetView) fleetDTO {
	out := fleetDTO{Capacity: v.Capacity, Running: v.Running, Free: v.Free, Instances: make([]fleetInstanceDTO, 0, len(v.Instances))}
	for _, i := range v.Instances {
		out.Instances = append(out.Instances, fleetInstanceDTO{
			ID: i.ID, Capacity: i.Capacity, Running: i.Running, Draining: i.Draining,
			Version: i.Version, Engine: i.Engine, StartedAt: i.StartedAt.UnixMilli(), SeenAt: i.SeenAt.UnixMilli(),
		})
	}
	return out
}
