package web

// teamRoutes are the team's members: roles, invitations, removal.
func (c *Console) teamRoutes() []route {
	return nil
}
