package web

// dataRoutes are a profile's browser data and its time machine (snapshots).
func (c *Console) dataRoutes() []route {
	return nil
}
