-- Browser sessions: the relay finds a session by the id in its cdpUrl,
-- checks the token's hash, and relays to the instance (node) that runs the
-- browser.
ALTER TABLE profiles ADD COLUMN session_cdp_token_hash TEXT;
ALTER TABLE profiles ADD COLUMN session_node TEXT;

CREATE UNIQUE INDEX profiles_session_id_idx ON profiles (session_id) WHERE session_id IS NOT NULL;
