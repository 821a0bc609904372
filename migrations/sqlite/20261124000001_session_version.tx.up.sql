-- A user's session version goes up each time every session of the user is
-- cut off (a password reset, a reused refresh token); access tokens carry
-- the version they were issued under. Existing users start at 0, the
-- version of tokens issued before the claim existed.
ALTER TABLE users ADD COLUMN session_version integer NOT NULL DEFAULT 0;

-- A reset revokes every API key and reset token of the user, and a removal
-- every key of a member: both look keys and tokens up by user.
CREATE INDEX api_keys_user_idx ON api_keys (user_id);
CREATE INDEX reset_tokens_user_idx ON reset_tokens (user_id);
