import GRDB

extension Migrations {
    /// Health projections (issue 15; docs/design/health.md, "Projections"): the server's daily rollups for the keys
    /// this gateway's uploads touched, with their freshness. A key is (device uid, user index or none, metric, UTC
    /// day); `userIndex` may be NULL, so uniqueness is an index on `ifnull(userIndex, -1)` (UNIQUE treats NULLs as
    /// distinct). `stale`: an upload touched the key since its rollup was fetched (or it never was); `computing`: a
    /// pull holds it under `claimToken` until `claimExpiresAt` (a killed pull's keys come back when that passes);
    /// `fresh`: the rollup is the server's answer to a pull that started after the last touch. The rollup columns
    /// are NULL until a first answer; values are the server's decimal numerals, as text.
    static func v10HealthProjections(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE healthProjection (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                deviceUid TEXT NOT NULL CHECK (length(deviceUid) BETWEEN 1 AND 128),
                userIndex INTEGER CHECK (userIndex BETWEEN 0 AND 255),
                metricCode INTEGER NOT NULL CHECK (metricCode BETWEEN 1 AND 4294967295),
                day TEXT NOT NULL CHECK (length(day) = 10 AND day GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
                freshness TEXT NOT NULL DEFAULT 'stale' CHECK (freshness IN ('stale', 'computing', 'fresh')),
                claimToken TEXT CHECK (claimToken IS NULL OR length(claimToken) = 36),
                claimExpiresAt INTEGER,
                sampleCount INTEGER CHECK (sampleCount >= 0),
                specialCount INTEGER CHECK (specialCount >= 0),
                otherUnitCount INTEGER CHECK (otherUnitCount >= 0),
                unit TEXT,
                minValue TEXT,
                maxValue TEXT,
                sumValue TEXT,
                meanValue TEXT,
                lastValue TEXT,
                lastEffectiveAt INTEGER,
                revision TEXT CHECK (revision IS NULL OR length(revision) = 32),
                computedAt INTEGER,
                fetchedAt INTEGER,
                CHECK ((freshness = 'computing') = (claimToken IS NOT NULL)),
                CHECK ((claimToken IS NULL) = (claimExpiresAt IS NULL)),
                CHECK (freshness <> 'fresh' OR fetchedAt IS NOT NULL),
                CHECK ((fetchedAt IS NULL) = (sampleCount IS NULL)),
                CHECK ((fetchedAt IS NULL) = (revision IS NULL)),
                CHECK ((lastValue IS NULL) = (lastEffectiveAt IS NULL)),
                CHECK (sampleCount IS NULL OR (sampleCount = 0) = (meanValue IS NULL))
            ) STRICT;
            CREATE UNIQUE INDEX healthProjectionKey ON healthProjection(deviceUid, ifnull(userIndex, -1), metricCode, day);
            -- The pull's claim walks the keys not fresh.
            CREATE INDEX healthProjectionDue ON healthProjection(freshness, id) WHERE freshness <> 'fresh';
            """)
    }
}
