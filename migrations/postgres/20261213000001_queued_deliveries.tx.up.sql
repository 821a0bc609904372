-- An event's deliveries are now queued in the transaction that writes the
-- event, so nothing is left to fan out afterwards: the events still listed
-- in outbox_pending are fanned out here, as the fan-out did, to each
-- enabled endpoint of their team that takes their type and was created
-- before them (after_seq), due at once. A delivery's id joins its event's
-- and its endpoint's, so it is unique and sorts by the event's age; its
-- body is the webhook payload, {id, type, created_at, data}.
INSERT INTO webhook_deliveries (id, team_id, endpoint_id, event_id, event_type, payload, status, attempts,
    started, round_start, next_attempt_at, claimable_at, created_at, updated_at)
SELECT 'dlv_' || substr(o.id, 5) || substr(ep.id, 5), o.team_id, ep.id, o.id, o.type,
    '{"id":' || to_json(o.id)::text || ',"type":' || to_json(o.type)::text || ',"created_at":' ||
    to_json(regexp_replace(to_char(o.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '\.?0+$', '') || 'Z')::text ||
    ',"data":' || o.data || '}',
    'pending', '[]', 0, 0, o.occurred_at, o.occurred_at, o.occurred_at, o.occurred_at
FROM outbox_pending AS p
JOIN outbox_events AS o ON o.id = p.id
JOIN webhook_endpoints AS ep ON ep.team_id = o.team_id
WHERE ep.enabled AND o.seq > ep.after_seq AND ep.events::jsonb ?| ARRAY[o.type, '*'];

DROP TABLE outbox_pending;

-- The outbox's numbering only told which events an endpoint created later
-- takes; an endpoint now takes the events written once it exists.
ALTER TABLE webhook_endpoints DROP COLUMN after_seq;
ALTER TABLE outbox_events DROP COLUMN seq;
