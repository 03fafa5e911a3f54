/** The statements of the objects a lane owes its bucket (payload-store.ts, payload-sweep.ts run them). */

/** An upload about to start (?1 key, ?2 now), and the lane's mark that it has held objects. */
export const RECORD_UPLOAD_SQL = `INSERT OR REPLACE INTO payload_objects (key, state, at) VALUES (?1, 'uploading', ?2)`;
export const MARK_HOLDS_SQL = `INSERT OR IGNORE INTO payload_objects (key, state, at) VALUES ('', 'marker', ?1)`;

/** Whether the lane has ever held an object: read once per instance. */
export const HOLDS_SQL = `SELECT EXISTS (SELECT 1 FROM payload_objects) AS holds`;

/** The objects owed, oldest first (?1 how many). */
export const OWED_SQL = `SELECT key, state FROM payload_objects WHERE state <> 'marker' ORDER BY at, key LIMIT +?1`;

/** An upload that its job owns now: nothing owed (?1 key). */
export const FORGET_SQL = `DELETE FROM payload_objects WHERE key = ?1 AND state <> 'marker'`;

/** An upload no job owns: to delete (?1 key). */
export const TO_DELETE_SQL = `UPDATE payload_objects SET state = 'deleting' WHERE key = ?1`;

/** Objects deleted from the bucket (?1 JSON array of keys). */
export const DELETED_SQL = `DELETE FROM payload_objects WHERE key IN (SELECT value FROM json_each(?1)) AND state = 'deleting'`;

/** The columns of the job an object's key names, to see whether it points at it (?1 id). */
export const JOB_COLUMNS_BY_ID_SQL = `SELECT payload, result FROM jobs WHERE id = ?1`;

/** A job's generation (?1 id): a result's key names the attempt that wrote it. */
export const GENERATION_SQL = `SELECT generation FROM jobs WHERE id = ?1`;

/**
 * Of some keys (?1 a JSON array), those a dead-letter copy still owed holds (deadletters/outbox.ts
 * reads the object when it delivers): kept for it though no job points at them any more.
 */
export const HELD_FOR_COPIES_SQL = `SELECT DISTINCT held AS key FROM dead_letter_outbox WHERE held IN (SELECT value FROM json_each(?1))`;

/** An object that neither a job nor a copy owed holds any more: to delete (?1 key, ?2 now). */
export const OWE_DELETION_SQL = `INSERT OR REPLACE INTO payload_objects (key, state, at) VALUES (?1, 'deleting', ?2)`;
