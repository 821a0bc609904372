-- A profile's fingerprint became a whole device (screen and window beyond
-- the size, navigator, client hints, WebGL, fonts, media devices, WebRTC
-- policy and noise seed). The six columns it had stay; the rest is one
-- JSON document in device, on profiles and on the snapshots that keep a
-- profile's settings. Rows written before hold '' there: the service reads
-- them with a device it derives from the profile's id, the same on every
-- read, and writes it with the profile's next change. A constant default
-- adds the column without rewriting the tables.
ALTER TABLE profiles ADD COLUMN device text NOT NULL DEFAULT '';

ALTER TABLE snapshots ADD COLUMN device text NOT NULL DEFAULT '';
