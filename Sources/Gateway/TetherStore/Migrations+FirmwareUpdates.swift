import GRDB

extension Migrations {
    /// The firmware update journal (issue 16, "The update flow": "an upload journal in the store lets an update
    /// resume after a disconnect or a tetherd restart from the device's offset"; `FirmwareUpdateJournal`). One row
    /// per update tetherd was asked for, refused ones included. At most one unfinished update per device (the
    /// partial UNIQUE index): a second request for a device that has one is refused, not queued beside it.
    /// `imageHash` is the MCUboot image's SHA256 TLV (what the device's image state reports for it);
    /// `uploadSha256` the SHA-256 of the whole file (the upload's `sha`, by which a device resumes an upload).
    static func v12FirmwareUpdates(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE firmwareUpdate (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                uid TEXT NOT NULL UNIQUE CHECK (length(uid) = 36),
                address TEXT NOT NULL CHECK (length(address) = 17),
                imageVersion TEXT NOT NULL CHECK (length(imageVersion) BETWEEN 1 AND 64),
                imageHash BLOB NOT NULL CHECK (length(imageHash) = 32),
                uploadSha256 BLOB NOT NULL CHECK (length(uploadSha256) = 32),
                imageBytes INTEGER NOT NULL CHECK (imageBytes > 0),
                imagePath TEXT NOT NULL CHECK (length(imagePath) >= 1),
                leaveInTest INTEGER NOT NULL CHECK (leaveInTest IN (0, 1)),
                proveForMilliseconds INTEGER NOT NULL CHECK (proveForMilliseconds >= 0),
                phase TEXT NOT NULL CHECK (phase IN ('uploading', 'testing', 'proving', 'confirming', 'finished')),
                bytesAcknowledged INTEGER NOT NULL DEFAULT 0 CHECK (bytesAcknowledged BETWEEN 0 AND imageBytes),
                attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
                outcome TEXT CHECK (outcome IN ('confirmed', 'running-in-test', 'already-running', 'reverted', 'failed', 'cancelled')),
                message TEXT,
                createdAt INTEGER NOT NULL,
                updatedAt INTEGER NOT NULL,
                finishedAt INTEGER,
                CHECK ((phase = 'finished') = (outcome IS NOT NULL)),
                CHECK ((phase = 'finished') = (finishedAt IS NOT NULL)),
                CHECK (updatedAt >= createdAt)
            );
            CREATE UNIQUE INDEX firmwareUpdateOneUnfinished ON firmwareUpdate(address) WHERE phase <> 'finished';
            CREATE INDEX firmwareUpdateByAddress ON firmwareUpdate(address, id);
            """)
    }

    /// Issue 16: "the outcome and the new firmware version land in the device registry and reach the backend through
    /// the outbox". A finished update is an outbox entity (`firmwareUpdate`, queued in the transaction that finishes
    /// it), and the peripheral registry says which image the device runs after the latest update that left it on
    /// one: the image's version and hash, whether it was confirmed (else MCUboot reverts it at the next reset), and
    /// the update that put it there. The Device Information Service's firmware revision stays what the device says.
    static func v13FirmwareUpdateOutcomes(_ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO outboxEntityType (name) VALUES ('firmwareUpdate');
            ALTER TABLE peripheral ADD COLUMN runningImageVersion TEXT CHECK (runningImageVersion IS NULL OR length(runningImageVersion) BETWEEN 1 AND 64);
            ALTER TABLE peripheral ADD COLUMN runningImageHash BLOB CHECK (runningImageHash IS NULL OR length(runningImageHash) = 32);
            ALTER TABLE peripheral ADD COLUMN runningImageConfirmed INTEGER CHECK (runningImageConfirmed IS NULL OR runningImageConfirmed IN (0, 1));
            ALTER TABLE peripheral ADD COLUMN runningImageUpdate TEXT CHECK (runningImageUpdate IS NULL OR length(runningImageUpdate) = 36);
            """)
    }
}
