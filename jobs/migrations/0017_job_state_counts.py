"""PostgreSQL: how many jobs are in each state, kept by triggers (jobs/state_counts.py reads it).

An exact ``COUNT(*)`` of 100,000 jobs costs PostgreSQL 10 ms for every list page (it visits
every index entry), two thirds of a list request's database time. The triggers add one row of
per-state deltas for each statement that inserts, deletes or changes the state of jobs; the
total of a state is the sum of its deltas, and the scheduler's tick folds the rows into one
per state (``job_state_counts_compact``). Only inserts go to the table, so concurrent writers
never wait on one another's counters. SQLite counts a whole table from its b-tree without
visiting entries and needs none of this: the migration does nothing there.
"""

from django.db import migrations

CREATE = """
CREATE TABLE jobs_jobstatecount (
    id bigserial PRIMARY KEY,
    status varchar(16) NOT NULL,
    delta bigint NOT NULL
);

CREATE FUNCTION jobs_jobstatecount_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO jobs_jobstatecount (status, delta)
    SELECT status, count(*) FROM jobs_inserted GROUP BY status;
    RETURN NULL;
END $$;

CREATE FUNCTION jobs_jobstatecount_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO jobs_jobstatecount (status, delta)
    SELECT status, -count(*) FROM jobs_deleted GROUP BY status;
    RETURN NULL;
END $$;

CREATE FUNCTION jobs_jobstatecount_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO jobs_jobstatecount (status, delta)
    SELECT status, sum(delta) FROM (
        SELECT o.status, -1 AS delta FROM jobs_before o JOIN jobs_after n ON n.id = o.id
        WHERE n.status <> o.status
        UNION ALL
        SELECT n.status, 1 FROM jobs_before o JOIN jobs_after n ON n.id = o.id
        WHERE n.status <> o.status
    ) changed GROUP BY status;
    RETURN NULL;
END $$;

CREATE FUNCTION jobs_jobstatecount_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM jobs_jobstatecount;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_jobstatecount_inserted AFTER INSERT ON jobs_job
    REFERENCING NEW TABLE AS jobs_inserted
    FOR EACH STATEMENT EXECUTE FUNCTION jobs_jobstatecount_inserted();
CREATE TRIGGER jobs_jobstatecount_deleted AFTER DELETE ON jobs_job
    REFERENCING OLD TABLE AS jobs_deleted
    FOR EACH STATEMENT EXECUTE FUNCTION jobs_jobstatecount_deleted();
CREATE TRIGGER jobs_jobstatecount_updated AFTER UPDATE ON jobs_job
    REFERENCING OLD TABLE AS jobs_before NEW TABLE AS jobs_after
    FOR EACH STATEMENT EXECUTE FUNCTION jobs_jobstatecount_updated();
-- Django's test flush and an admin's TRUNCATE empty jobs_job without DELETE triggers.
CREATE TRIGGER jobs_jobstatecount_truncated AFTER TRUNCATE ON jobs_job
    FOR EACH STATEMENT EXECUTE FUNCTION jobs_jobstatecount_truncated();

-- The jobs there are now; writers wait until this migration commits.
LOCK TABLE jobs_job IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO jobs_jobstatecount (status, delta)
SELECT status, count(*) FROM jobs_job GROUP BY status;
"""

DROP = """
DROP TRIGGER IF EXISTS jobs_jobstatecount_inserted ON jobs_job;
DROP TRIGGER IF EXISTS jobs_jobstatecount_deleted ON jobs_job;
DROP TRIGGER IF EXISTS jobs_jobstatecount_updated ON jobs_job;
DROP TRIGGER IF EXISTS jobs_jobstatecount_truncated ON jobs_job;
DROP FUNCTION IF EXISTS jobs_jobstatecount_inserted();
DROP FUNCTION IF EXISTS jobs_jobstatecount_deleted();
DROP FUNCTION IF EXISTS jobs_jobstatecount_updated();
DROP FUNCTION IF EXISTS jobs_jobstatecount_truncated();
DROP TABLE IF EXISTS jobs_jobstatecount;
"""


def _on_postgresql(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0016_jobgang_copy_of"),
    ]

    operations = [
        migrations.RunPython(_on_postgresql(CREATE), _on_postgresql(DROP)),
    ]
