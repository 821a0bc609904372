package web

// proxyRoutes are the team's proxies: list, add, test, check.
func (c *Console) proxyRoutes() []route {
	return nil
}
