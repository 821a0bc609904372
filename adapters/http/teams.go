package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/application/teams"
)

// TeamHandlers serves teams, invitations and members.
type TeamHandlers struct{ svc *teams.Service }

// NewTeamHandlers returns the team endpoints of svc.
func NewTeamHandlers(svc *teams.Service) *TeamHandlers { return &TeamHandlers{svc: svc} }

// Routes lists the team endpoints.
func (h *TeamHandlers) Routes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/api/v1/teams", Handler: h.listTeams, Name: "teams.list"},
		{Method: http.MethodPost, Path: "/api/v1/teams/invite", Handler: h.invite, Name: "teams.invite"},
		{Method: http.MethodPost, Path: "/api/v1/teams/invitations/accept", Handler: h.accept, Name: "teams.accept"},
		{Method: http.MethodGet, Path: "/api/v1/teams/members", Handler: h.listMembers, Name: "teams.members.list"},
		{Method: http.MethodPatch, Path: "/api/v1/teams/members/{id}", Handler: h.updateMember, Name: "teams.members.update"},
	}
}

type teamDTO struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Role        string `json:"role"`
	MemberCount int    `json:"memberCount"`
	CreatedAt   int64  `json:"createdAt"`
}

func toTeamDTO(v teams.TeamView) teamDTO {
	return teamDTO{ID: v.Team.ID, Name: v.Team.Name, Role: string(v.Role), MemberCount: v.MemberCount, CreatedAt: v.Team.CreatedAt.UnixMilli()}
}

type memberDTO struct {
	ID        string  `json:"id"`
	UserID    *string `json:"userId"`
	Email     string  `json:"email"`
	Name      *string `json:"name"`
	Role      string  `json:"role"`
	Status    string  `json:"status"`
	InvitedAt int64   `json:"invitedAt"`
	JoinedAt  *int64  `json:"joinedAt"`
}

func toMemberDTO(v teams.MemberView) memberDTO {
	m := v.Member
	d := memberDTO{ID: m.ID, Email: m.Email, Role: string(m.Role), Status: string(m.Status), InvitedAt: m.InvitedAt.UnixMilli()}
	if m.UserID != "" {
		d.UserID = &m.UserID
	}
	if v.Name != "" {
		d.Name = &v.Name
	}
	if m.JoinedAt != nil {
		ms := m.JoinedAt.UnixMilli()
		d.JoinedAt = &ms
	}
	return d
}

func (h *TeamHandlers) listTeams(w http.ResponseWriter, r *http.Request) error {
	ts, err := h.svc.ListTeams(r.Context(), actorFrom(r.Context()))
	if err != nil {
		return err
	}
	out := make([]teamDTO, 0, len(ts))
	for _, t := range ts {
		out = append(out, toTeamDTO(t))
	}
	writeList(w, out, "", len(out))
	return nil
}

type inviteRequest struct {
	Email string `json:"email"`
	Role  string `json:"role"`
}

func (h *TeamHandlers) invite(w http.ResponseWriter, r *http.Request) error {
	var in inviteRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	m, err := h.svc.Invite(r.Context(), actorFrom(r.Context()), in.Email, in.Role)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toMemberDTO(m))
	return nil
}

type acceptRequest struct {
	Token string `json:"token"`
}

func (h *TeamHandlers) accept(w http.ResponseWriter, r *http.Request) error {
	var in acceptRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	t, err := h.svc.Accept(r.Context(), actorFrom(r.Context()), in.Token)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toTeamDTO(t))
	return nil
}

func (h *TeamHandlers) listMembers(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := h.svc.ListMembers(r.Context(), actorFrom(r.Context()), cursor, limit)
	if err != nil {
		return err
	}
	out := make([]memberDTO, 0, len(page.Items))
	for _, m := range page.Items {
		out = append(out, toMemberDTO(m))
	}
	writeList(w, out, page.NextCursor, page.Limit)
	return nil
}

type updateMemberRequest struct {
	Role   *string `json:"role"`
	Status *string `json:"status"`
}

func (updateMemberRequest) readOnlyFields() []string {
	return []string{"email", "name", "invitedAt", "joinedAt"}
}

func (h *TeamHandlers) updateMember(w http.ResponseWriter, r *http.Request) error {
	var in updateMemberRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	m, err := h.svc.UpdateMember(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"], teams.UpdateInput(in))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toMemberDTO(m))
	return nil
}
