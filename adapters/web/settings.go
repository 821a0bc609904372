package web

// settingsRoutes are the Settings pages: API keys, webhook endpoints and the failed deliveries.
func (c *Console) settingsRoutes() []route {
	return nil
}
