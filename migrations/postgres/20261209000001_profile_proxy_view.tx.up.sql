-- A profile read on PostgreSQL showed its proxy's type, port and host
-- through a subquery on proxies, which opened that table and its index for
-- every read, whether the profile had a proxy or not: about a sixth of
-- PostgreSQL's work on a profile read. The view is now kept in the
-- profile's row, as "type port host" (neither the type nor the port holds
-- a space), NULL without a proxy, by the triggers below: set when a profile
-- is written with a proxy, written again when the proxy's type, host or
-- port changes, cleared when the proxy is deleted.
--
-- A profile written with a proxy reads it FOR SHARE: a change of the proxy
-- that has not committed is waited for and read once it has, and a change
-- that starts meanwhile waits for the profile's write, whose row it then
-- sees and writes; no profile keeps a view the proxy no longer has.
ALTER TABLE profiles ADD COLUMN proxy_view text;

UPDATE profiles AS p SET proxy_view = px.type || ' ' || px.port || ' ' || px.host
FROM proxies AS px WHERE px.id = p.proxy_id AND px.team_id = p.team_id;

CREATE FUNCTION profile_proxy_view() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.proxy_view := NULL;
    IF NEW.proxy_id IS NOT NULL THEN
        SELECT px.type || ' ' || px.port || ' ' || px.host INTO NEW.proxy_view
        FROM proxies AS px WHERE px.id = NEW.proxy_id AND px.team_id = NEW.team_id
        FOR SHARE;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER profiles_proxy_view_insert BEFORE INSERT ON profiles
    FOR EACH ROW WHEN (NEW.proxy_id IS NOT NULL)
    EXECUTE FUNCTION profile_proxy_view();

CREATE TRIGGER profiles_proxy_view_update BEFORE UPDATE ON profiles
    FOR EACH ROW
    WHEN (NEW.proxy_id IS DISTINCT FROM OLD.proxy_id OR NEW.team_id IS DISTINCT FROM OLD.team_id)
    EXECUTE FUNCTION profile_proxy_view();

CREATE FUNCTION proxy_profiles_view() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE profiles SET proxy_view = NULL WHERE team_id = OLD.team_id AND proxy_id = OLD.id;
    ELSE
        UPDATE profiles SET proxy_view = NEW.type || ' ' || NEW.port || ' ' || NEW.host
        WHERE team_id = NEW.team_id AND proxy_id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER proxies_profiles_view AFTER UPDATE ON proxies
    FOR EACH ROW
    WHEN (OLD.type IS DISTINCT FROM NEW.type OR OLD.host IS DISTINCT FROM NEW.host OR OLD.port IS DISTINCT FROM NEW.port)
    EXECUTE FUNCTION proxy_profiles_view();

CREATE TRIGGER proxies_profiles_view_delete AFTER DELETE ON proxies
    FOR EACH ROW EXECUTE FUNCTION proxy_profiles_view();
