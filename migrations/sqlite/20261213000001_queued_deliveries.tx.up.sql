-- An event's deliveries are now queued in the transaction that writes the
-- event, so nothing is left to fan out afterwards: the events still listed
-- in outbox_pending are fanned out here, as the fan-out did, to each
-- enabled endpoint of their team that takes their type and was created
-- before them (after_seq), due at once. A delivery's id joins its event's
-- and its endpoint's, so it is unique and sorts by the event's age; its
-- body is the webhook payload, {id, type, created_at, data}. Times are
-- kept as "2006-01-02 15:04:05.999999+00:00", in UTC.
INSERT INTO webhook_deliveries (id, team_id, endpoint_id, event_id, event_type, payload, status, attempts,
    started, round_start, next_attempt_at, claimable_at, created_at, updated_at)
SELECT 'dlv_' || substr(o.id, 5) || substr(ep.id, 5), o.team_id, ep.id, o.id, o.type,
    '{"id":' || json_quote(o.id) || ',"type":' || json_quote(o.type) || ',"created_at":' ||
    json_quote(replace(replace(o.occurred_at, ' ', 'T'), '+00:00', 'Z')) || ',"data":' || o.data || '}',
    'pending', '[]', 0, 0, o.occurred_at, o.occurred_at, o.occurred_at, o.occurred_at
FROM outbox_pending AS p
JOIN outbox_events AS o ON o.id = p.id
JOIN webhook_endpoints AS ep ON ep.team_id = o.team_id
WHERE ep.enabled AND o.seq > ep.after_seq
  AND EXISTS (SELECT 1 FROM json_each(ep.events) WHERE json_each.value IN (o.type, '*'));

DROP TRIGGER outbox_events_pending;
DROP TABLE outbox_pending;

-- The outbox's numbering only told which events an endpoint created later
-- takes; an endpoint now takes the events written once it exists.
ALTER TABLE webhook_endpoints DROP COLUMN after_seq;
DROP TRIGGER outbox_events_seq;
DROP INDEX outbox_events_seq_idx;
ALTER TABLE outbox_events DROP COLUMN seq;
