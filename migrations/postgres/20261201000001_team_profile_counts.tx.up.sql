-- How many profiles each team holds, so that a create checks the quota and
-- serializes with the team's other creates in the statement that inserts the
-- profile: the upsert locks the team's row and re-reads its count.
CREATE TABLE team_profile_counts (
    team_id  text PRIMARY KEY,
    profiles integer NOT NULL
);

INSERT INTO team_profile_counts (team_id, profiles)
SELECT team_id, count(*) FROM profiles GROUP BY team_id;
