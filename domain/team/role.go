package team

// Role orders what a member may do: owner > admin > member > viewer.
type Role string

// Roles, from most to least powerful.
const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
	RoleViewer Role = "viewer"
)

// ParseRole returns the role named s and whether it exists.
func ParseRole(s string) (Role, bool) {
	r := Role(s)
	return r, r.rank() > 0
}

// Action is something a role may or may not do inside its team.
type Action string

// The actions of the roles table. Each endpoint maps to exactly one.
const (
	// ActRead: read anything in the team.
	ActRead Action = "read"
	// ActWrite: create and update profiles, launch, release one's own session,
	// snapshots and restore, add, test, check and update proxies, one's own API keys.
	ActWrite Action = "write"
	// ActDelete: delete profiles and proxies, release another member's session.
	ActDelete Action = "delete"
	// ActAdminister: webhooks, invite and update members, other members' API keys.
	ActAdminister Action = "administer"
	// ActManageOwners: make or remove owners.
	ActManageOwners Action = "manage_owners"
)

var minimumRank = map[Action]int{
	ActRead:         1,
	ActWrite:        2,
	ActDelete:       3,
	ActAdminister:   3,
	ActManageOwners: 4,
}

func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleMember:
		return 2
	case RoleAdmin:
		return 3
	case RoleOwner:
		return 4
	}
	return 0
}

// Can reports whether the role may perform action. Unknown roles and unknown
// actions are refused.
func (r Role) Can(action Action) bool {
	need, ok := minimumRank[action]
	return ok && r.rank() >= need
}
