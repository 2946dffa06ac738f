/**
 * The ledger's schema, as numbered migrations shipped in this package. Each is applied once,
 * in order, in one transaction under an advisory lock (`migrate.ts`), and says the oldest
 * reader that can still use the schema it leaves (`minReader`: a reader knows the migrations up
 * to its own `SCHEMA_VERSION`). A migration is never edited once released: a change is a new one.
 */

export interface Migration {
  /** 1, 2, 3…: applied in this order, each once. */
  readonly version: number;
  /** The oldest reader (by the newest migration it knows) that can still use the schema after this one. */
  readonly minReader: number;
  readonly description: string;
  readonly sql: string;
}

/** The terminal states: once a job is in one, the database refuses to move it out. */
const TERMINAL = `('succeeded', 'failed', 'cancelled')`;

/** Whether the role running the statement is one of the lab's admins. */
const IS_ADMIN = 'yonder.is_admin(current_user)';

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    minReader: 1,
    description: 'jobs with owners, events, settings, profiles and leases under row-level security',
    sql: `
-- The group role of yonder's users belongs to the whole cluster: another database's migration
-- may be making it at the same moment, so a failure counts only when it is still missing.
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'yonder_user') THEN CREATE ROLE yonder_user NOLOGIN; END IF;
EXCEPTION WHEN OTHERS THEN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'yonder_user') THEN RAISE; END IF;
END $$;
GRANT USAGE ON SCHEMA yonder TO yonder_user;

-- The ledger's admins: this database's own list (roles are the cluster's, shared by every
-- database; being an admin of one ledger makes no one an admin of another).
CREATE TABLE yonder.admins (role name PRIMARY KEY);
CREATE FUNCTION yonder.is_admin(who name) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, yonder AS $$ SELECT EXISTS (SELECT FROM yonder.admins WHERE role = who) $$;

-- One row per job (ids and creation times in byte order, as yonder sorts them): the record as core wrote it (json keeps its text), and what the database
-- derives from it or decides itself: the owner (role, user, host), the state, the revision.
CREATE TABLE yonder.jobs (
  id text COLLATE "C" PRIMARY KEY CHECK (id ~ '^[0-9a-f]{6,64}$'),
  owner_role name NOT NULL DEFAULT current_user,
  owner_user text NOT NULL,
  owner_host text NOT NULL,
  state text NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  revision integer NOT NULL,
  record json NOT NULL,
  written_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_by_owner ON yonder.jobs (owner_role, created_at DESC, id DESC);
CREATE INDEX jobs_by_creation ON yonder.jobs (created_at DESC, id DESC);
CREATE INDEX jobs_active ON yonder.jobs (owner_role) WHERE state NOT IN ${TERMINAL};

-- A job's history, append-only: one row per write, by a trigger in the writing transaction.
CREATE TABLE yonder.job_events (
  seq bigserial PRIMARY KEY,
  job_id text NOT NULL REFERENCES yonder.jobs (id) ON DELETE CASCADE,
  owner_role name NOT NULL,
  revision integer NOT NULL,
  state text NOT NULL,
  previous_state text,
  written_by name NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_events_by_job ON yonder.job_events (job_id, seq);

-- The settings a job was submitted with: its owner's and the admins' only.
CREATE TABLE yonder.job_settings (
  job_id text PRIMARY KEY REFERENCES yonder.jobs (id) ON DELETE CASCADE,
  owner_role name NOT NULL DEFAULT current_user,
  text text NOT NULL
);

CREATE TABLE yonder.profiles (
  owner_role name NOT NULL DEFAULT current_user,
  name_key text NOT NULL,
  body json NOT NULL,
  PRIMARY KEY (owner_role, name_key)
);

-- Leases that let a user's processes, on any host, share one poll of a target.
CREATE TABLE yonder.leases (
  owner_role name NOT NULL DEFAULT current_user,
  key text NOT NULL,
  holder text,
  expires_at timestamptz NOT NULL DEFAULT now(),
  last_completed_at text,
  PRIMARY KEY (owner_role, key)
);

-- What a write may not do, whoever writes: leave a terminal state, change a job's id, owner
-- or creation, or go back in revisions. The columns are derived from the record here, so they
-- never disagree with it.
CREATE FUNCTION yonder.jobs_check() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.state := NEW.record->>'state';
  NEW.created_at := NEW.record->>'createdAt';
  NEW.revision := (NEW.record->>'revision')::integer;
  IF NEW.state IS NULL OR NEW.created_at IS NULL OR NEW.revision IS NULL OR NEW.record->>'id' IS DISTINCT FROM NEW.id THEN
    RAISE EXCEPTION 'job %: the record lacks its id, state, createdAt or revision', NEW.id USING ERRCODE = 'YN002';
  END IF;
  IF TG_OP = 'UPDATE' THEN
    IF OLD.state IN ${TERMINAL} AND NEW.state IS DISTINCT FROM OLD.state THEN
      RAISE EXCEPTION 'job % is %, a final state; it cannot become %', OLD.id, OLD.state, NEW.state
        USING ERRCODE = 'YN001';
    END IF;
    IF NEW.id <> OLD.id OR NEW.owner_role <> OLD.owner_role OR NEW.owner_user <> OLD.owner_user
       OR NEW.owner_host <> OLD.owner_host OR NEW.created_at <> OLD.created_at THEN
      RAISE EXCEPTION 'job %: its id, owner and creation time are never changed', OLD.id USING ERRCODE = 'YN002';
    END IF;
    IF NEW.revision <= OLD.revision THEN
      RAISE EXCEPTION 'job %: revision % does not follow %', OLD.id, NEW.revision, OLD.revision USING ERRCODE = 'YN002';
    END IF;
  END IF;
  NEW.written_at := now();
  RETURN NEW;
END $$;
CREATE TRIGGER jobs_check BEFORE INSERT OR UPDATE ON yonder.jobs
  FOR EACH ROW EXECUTE FUNCTION yonder.jobs_check();

-- The event row and the notification (an id only: NOTIFY is not filtered by row-level
-- security), in the writer's transaction. SECURITY DEFINER: no user may write events directly.
CREATE FUNCTION yonder.jobs_event() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, yonder AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('yonder_jobs', OLD.id);
    RETURN OLD;
  END IF;
  INSERT INTO yonder.job_events (job_id, owner_role, revision, state, previous_state, written_by)
    VALUES (NEW.id, NEW.owner_role, NEW.revision, NEW.state,
            CASE WHEN TG_OP = 'UPDATE' THEN OLD.state END, session_user);
  PERFORM pg_notify('yonder_jobs', NEW.id);
  RETURN NEW;
END $$;
CREATE TRIGGER jobs_event AFTER INSERT OR UPDATE OR DELETE ON yonder.jobs
  FOR EACH ROW EXECUTE FUNCTION yonder.jobs_event();

CREATE FUNCTION yonder.events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the job history is append-only' USING ERRCODE = 'YN003';
END $$;
CREATE TRIGGER job_events_append_only BEFORE UPDATE ON yonder.job_events
  FOR EACH ROW EXECUTE FUNCTION yonder.events_append_only();

-- Row-level security: every yonder user reads every job and its events; only its owner (or
-- an admin) changes a job; only its owner removes it; settings, profiles and leases are the
-- owner's alone (settings the admins' too).
ALTER TABLE yonder.jobs ENABLE ROW LEVEL SECURITY;
CREATE POLICY jobs_read ON yonder.jobs FOR SELECT TO yonder_user USING (true);
CREATE POLICY jobs_insert ON yonder.jobs FOR INSERT TO yonder_user
  WITH CHECK (owner_role = current_user OR ${IS_ADMIN});
CREATE POLICY jobs_update ON yonder.jobs FOR UPDATE TO yonder_user
  USING (owner_role = current_user OR ${IS_ADMIN})
  WITH CHECK (owner_role = current_user OR ${IS_ADMIN});
CREATE POLICY jobs_delete ON yonder.jobs FOR DELETE TO yonder_user
  USING (owner_role = current_user);
ALTER TABLE yonder.job_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_events_read ON yonder.job_events FOR SELECT TO yonder_user USING (true);
ALTER TABLE yonder.job_settings ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_settings_own ON yonder.job_settings FOR ALL TO yonder_user
  USING (owner_role = current_user OR ${IS_ADMIN})
  WITH CHECK (owner_role = current_user OR ${IS_ADMIN});
ALTER TABLE yonder.profiles ENABLE ROW LEVEL SECURITY;
CREATE POLICY profiles_own ON yonder.profiles FOR ALL TO yonder_user
  USING (owner_role = current_user) WITH CHECK (owner_role = current_user);
ALTER TABLE yonder.leases ENABLE ROW LEVEL SECURITY;
CREATE POLICY leases_own ON yonder.leases FOR ALL TO yonder_user
  USING (owner_role = current_user) WITH CHECK (owner_role = current_user);

GRANT SELECT, INSERT, UPDATE, DELETE ON yonder.jobs, yonder.job_settings, yonder.profiles, yonder.leases
  TO yonder_user;
GRANT SELECT ON yonder.job_events, yonder.schema_versions TO yonder_user;
`,
  },
];

/** The newest schema this package knows: a reader of version N uses a schema whose `minReader` ≤ N. */
export const SCHEMA_VERSION: number = MIGRATIONS.reduce(
  (newest, migration) => Math.max(newest, migration.version),
  0,
);
