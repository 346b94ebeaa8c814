/// The SQLite schema and its forward migrations. `PRAGMA user_version` holds the number
/// of migrations applied; a library is opened only by a program that knows at least as
/// many. Every migration runs in its own transaction. See docs/storage-format.md.
enum Schema {
    /// The first id handed out to albums, assets and scratch files; the numbers below
    /// are the fixed folders of the namespace (root, Albums, All Photos, ...).
    static let firstObjectID: Int64 = 1000

    static let migrations: [String] = [
        // 1: the initial schema.
        """
        CREATE TABLE meta(
            key TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO meta(key, value) VALUES ('next_object_id', \(firstObjectID));

        -- Content-addressed originals: one row per file in originals/.
        CREATE TABLE blobs(
            sha256 TEXT PRIMARY KEY,
            size INTEGER NOT NULL,
            created_at INTEGER NOT NULL
        ) WITHOUT ROWID;

        -- One photo or video. id is its inode number.
        CREATE TABLE assets(
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,               -- unique display name (All Photos, views)
            name_key TEXT NOT NULL UNIQUE,    -- NFC, lowercased
            original_name TEXT NOT NULL,
            sha256 TEXT NOT NULL REFERENCES blobs(sha256),
            size INTEGER NOT NULL,
            version INTEGER NOT NULL,
            media_type INTEGER NOT NULL,      -- 1 photo, 2 video
            format TEXT NOT NULL,             -- jpeg, heic, png, mp4, ...
            kinds INTEGER NOT NULL,           -- MediaKinds bits
            taken_at INTEGER NOT NULL,        -- capture instant, Unix seconds
            taken_offset INTEGER,             -- minutes east of UTC, NULL when unknown
            taken_day INTEGER NOT NULL,       -- yyyymmdd on the capture's own clock
            taken_source INTEGER NOT NULL,    -- CaptureSource
            sort_key INTEGER NOT NULL,        -- SortKey.asset(taken_at, id)
            mtime_ns INTEGER,                 -- an mtime a user set, if any
            width INTEGER, height INTEGER, orientation INTEGER, rotation INTEGER,
            latitude REAL, longitude REAL,
            make TEXT, model TEXT, lens TEXT,
            duration REAL,
            favorite INTEGER NOT NULL DEFAULT 0,
            hidden INTEGER NOT NULL DEFAULT 0,
            added_at INTEGER NOT NULL,        -- Unix seconds
            changed_ns INTEGER NOT NULL,      -- st_ctime
            trashed_at INTEGER,               -- Unix seconds, NULL unless in Recently Deleted
            links INTEGER NOT NULL DEFAULT 0  -- number of memberships (kept by triggers)
        );
        CREATE INDEX assets_sha256 ON assets(sha256);
        CREATE INDEX assets_taken ON assets(taken_at);
        CREATE INDEX assets_visible ON assets(sort_key) WHERE trashed_at IS NULL AND hidden = 0;
        CREATE INDEX assets_visible_day ON assets(taken_day, sort_key) WHERE trashed_at IS NULL AND hidden = 0;
        CREATE INDEX assets_favorites ON assets(sort_key) WHERE favorite = 1 AND trashed_at IS NULL AND hidden = 0;
        CREATE INDEX assets_videos ON assets(sort_key) WHERE media_type = 2 AND trashed_at IS NULL AND hidden = 0;
        CREATE INDEX assets_kinds ON assets(sort_key) WHERE kinds != 0 AND trashed_at IS NULL AND hidden = 0;
        CREATE INDEX assets_added ON assets(added_at) WHERE trashed_at IS NULL AND hidden = 0;
        CREATE INDEX assets_hidden ON assets(sort_key) WHERE hidden = 1 AND trashed_at IS NULL;
        CREATE INDEX assets_trashed ON assets(sort_key) WHERE trashed_at IS NOT NULL;

        -- Every version an asset has had, the current one included.
        CREATE TABLE versions(
            asset_id INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
            version INTEGER NOT NULL,
            sha256 TEXT NOT NULL REFERENCES blobs(sha256),
            size INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY(asset_id, version)
        ) WITHOUT ROWID;
        CREATE INDEX versions_sha256 ON versions(sha256);

        -- User albums; parent_id 0 is the top of Albums/. id is the inode number.
        CREATE TABLE albums(
            id INTEGER PRIMARY KEY,
            parent_id INTEGER NOT NULL,
            name TEXT NOT NULL,
            name_key TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            changed_ns INTEGER NOT NULL,
            UNIQUE(parent_id, name_key)
        );

        -- An asset in an album, under a name of that album.
        CREATE TABLE memberships(
            id INTEGER PRIMARY KEY,
            album_id INTEGER NOT NULL REFERENCES albums(id) ON DELETE CASCADE,
            asset_id INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            name_key TEXT NOT NULL,
            sort_key INTEGER NOT NULL,        -- SortKey.asset(taken_at, membership id)
            added_at INTEGER NOT NULL,
            UNIQUE(album_id, name_key)
        );
        CREATE INDEX memberships_sort ON memberships(album_id, sort_key);
        CREATE INDEX memberships_asset ON memberships(asset_id);
        CREATE TRIGGER memberships_count_add AFTER INSERT ON memberships BEGIN
            UPDATE assets SET links = links + 1 WHERE id = NEW.asset_id;
        END;
        CREATE TRIGGER memberships_count_remove AFTER DELETE ON memberships BEGIN
            UPDATE assets SET links = links - 1 WHERE id = OLD.asset_id;
        END;
        CREATE TRIGGER memberships_count_move AFTER UPDATE OF asset_id ON memberships BEGIN
            UPDATE assets SET links = links - 1 WHERE id = OLD.asset_id;
            UPDATE assets SET links = links + 1 WHERE id = NEW.asset_id;
        END;

        -- Plain files of a directory that are never imported (dot files, client junk).
        -- Their bytes live in scratch/<id>. id is the inode number. (Schema 5: plain_files.)
        CREATE TABLE scratch(
            id INTEGER PRIMARY KEY,
            dir_ino INTEGER NOT NULL,
            name TEXT NOT NULL,
            name_key TEXT NOT NULL,
            mode INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            changed_ns INTEGER NOT NULL,
            UNIQUE(dir_ino, name_key)
        );

        -- Extended attributes of any inode: user.xdg.*, user.DOSATTRIB, ...
        CREATE TABLE xattrs(
            ino INTEGER NOT NULL,
            name TEXT NOT NULL,
            value BLOB NOT NULL,
            PRIMARY KEY(ino, name)
        ) WITHOUT ROWID;

        -- Inode numbers that were handed out for a file being written and then became
        -- another, existing asset (the bytes were a duplicate). Kept so that a client
        -- holding the old number still reaches the file.
        CREATE TABLE aliases(
            ino INTEGER PRIMARY KEY,
            asset_id INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE
        );
        CREATE INDEX aliases_asset ON aliases(asset_id);
        """,
        // 2: permission bits a user set (chmod, cp -p, rsync -a); NULL is the default.
        """
        ALTER TABLE assets ADD COLUMN mode INTEGER;
        ALTER TABLE albums ADD COLUMN mode INTEGER;
        """,
        // 3: a blob's mtime when it was stored: a file changed on disk afterwards is
        // noticed when it is opened (NULL for blobs stored before, and not checked).
        """
        ALTER TABLE blobs ADD COLUMN mtime_ns INTEGER;
        """,
        // 4: folders list their albums and their scratch files in id order, a page at a
        // time: these make each page an index seek instead of a sort of the folder.
        """
        CREATE INDEX albums_children ON albums(parent_id, id);
        CREATE INDEX scratch_children ON scratch(dir_ino, id);
        """,
        // 5: plain files (the files of a folder that are not photos or videos, PRODUCT.md
        // section 3) replace scratch files. A plain file's bytes are its own file in
        // plain/, or an existing blob it shares (a save tool's backup of the previous
        // version) until it is written. `unfinished` marks a file created through the mount
        // and not closed yet: discarded at start-up if the daemon died meanwhile. A blob
        // found damaged is marked, so that good bytes with its hash can heal it.
        """
        ALTER TABLE scratch RENAME TO plain_files;
        DROP INDEX scratch_children;
        CREATE INDEX plain_files_children ON plain_files(dir_ino, id);
        ALTER TABLE plain_files ADD COLUMN blob_sha256 TEXT REFERENCES blobs(sha256);
        ALTER TABLE plain_files ADD COLUMN unfinished INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX plain_files_blob ON plain_files(blob_sha256) WHERE blob_sha256 IS NOT NULL;
        CREATE INDEX plain_files_unfinished ON plain_files(id) WHERE unfinished = 1;
        ALTER TABLE blobs ADD COLUMN damaged INTEGER NOT NULL DEFAULT 0;
        -- An alias made by a copy (a file whose bytes were a photo the library had) keeps
        -- reporting its own number to whoever holds it (an NFS client's handle from its
        -- CREATE); one made by a save reports the photo's, which the save keeps.
        ALTER TABLE aliases ADD COLUMN own_number INTEGER NOT NULL DEFAULT 0;
        """,
        // 6: what photo tools write (PRODUCT.md sections 1, 3 and 4). An asset's rating,
        // keywords (one per line) and caption as its own bytes carry them (XMP, IPTC). A
        // sidecar's reading of its XMP (MediaMetadata's text form). A sidecar that went to
        // Recently Deleted with its photo: out of every folder (dir_ino 0, a name_key no
        // name has) until the photo comes back, when it returns to `trashed_from`.
        """
        ALTER TABLE assets ADD COLUMN rating INTEGER;
        ALTER TABLE assets ADD COLUMN keywords TEXT;
        ALTER TABLE assets ADD COLUMN caption TEXT;
        ALTER TABLE plain_files ADD COLUMN xmp TEXT;
        ALTER TABLE plain_files ADD COLUMN trashed_with INTEGER;
        ALTER TABLE plain_files ADD COLUMN trashed_from INTEGER;
        CREATE INDEX plain_files_trashed ON plain_files(trashed_with) WHERE trashed_with IS NOT NULL;
        -- The desktop trash (freedesktop.org): `.Trash-UID` at the root of the mount
        -- (parent_id -1, role 1), its `files/` (role 2: photos trashed through it, by the
        -- name the file manager gave them), `info/` (role 3: plain files only) and
        -- `expunged/` (role 4: what gvfs empties out, deleted for good).
        ALTER TABLE albums ADD COLUMN role INTEGER;
        """,
        // 7: Live Photo pairing asks for the assets of the other media type taken within
        // two seconds. By time alone it read every asset of those seconds: a bulk copy of
        // files dated by their copy (no EXIF date), or a card whose photos share a date,
        // made each import read all the ones before it. One index per type, partial: an
        // index led by the type would be taken for the Videos view, which then sorts.
        """
        CREATE INDEX assets_photos_taken ON assets(taken_at) WHERE media_type = 1;
        CREATE INDEX assets_videos_taken ON assets(taken_at) WHERE media_type = 2;
        DROP INDEX assets_taken;
        """,
        // 8: on PostgreSQL, a folder's mode set with chmod (the `folder_mode:` keys of
        // `meta`) is told to the other hosts (PostgresSchema.modeNotify). A library on
        // SQLite has no other hosts: nothing changes here.
        "SELECT 1;",
        // 9: an album entry's number is never handed out again (AUTOINCREMENT): an entry's
        // shared thumbnails take their inode numbers from it, and a number that came back
        // for another entry would lead an NFS client's handle of the old one to another
        // photo's thumbnail. SQLite adds AUTOINCREMENT only to a new table: rebuilt with
        // its rows, numbers, indexes and triggers (a dropped table's triggers go first, so
        // the drop changes no link count).
        """
        CREATE TABLE memberships_numbered(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            album_id INTEGER NOT NULL REFERENCES albums(id) ON DELETE CASCADE,
            asset_id INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            name_key TEXT NOT NULL,
            sort_key INTEGER NOT NULL,
            added_at INTEGER NOT NULL,
            UNIQUE(album_id, name_key)
        );
        INSERT INTO memberships_numbered(id, album_id, asset_id, name, name_key, sort_key, added_at)
            SELECT id, album_id, asset_id, name, name_key, sort_key, added_at FROM memberships;
        DROP TABLE memberships;
        ALTER TABLE memberships_numbered RENAME TO memberships;
        CREATE INDEX memberships_sort ON memberships(album_id, sort_key);
        CREATE INDEX memberships_asset ON memberships(asset_id);
        CREATE TRIGGER memberships_count_add AFTER INSERT ON memberships BEGIN
            UPDATE assets SET links = links + 1 WHERE id = NEW.asset_id;
        END;
        CREATE TRIGGER memberships_count_remove AFTER DELETE ON memberships BEGIN
            UPDATE assets SET links = links - 1 WHERE id = OLD.asset_id;
        END;
        CREATE TRIGGER memberships_count_move AFTER UPDATE OF asset_id ON memberships BEGIN
            UPDATE assets SET links = links - 1 WHERE id = OLD.asset_id;
            UPDATE assets SET links = links + 1 WHERE id = NEW.asset_id;
        END;
        """,
        // 10: hard links of plain files (`ln`, `cp -al`, `rsync -H` in an album). A second
        // name of a plain file is a row of its own (its folder, its name) whose `link_of`
        // is the file's row: the file's number, bytes, mode, times and xattrs are that
        // row's, which counts its names in `links`. A link row's other columns are unused.
        // And a plain file's access time, when one was set on it (`touch -a`, `cp -a`;
        // 0: none was, its mtime shows).
        """
        ALTER TABLE plain_files ADD COLUMN link_of INTEGER;
        ALTER TABLE plain_files ADD COLUMN links INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE plain_files ADD COLUMN atime_ns INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX plain_files_links ON plain_files(link_of) WHERE link_of IS NOT NULL;
        """,
    ]

    static var currentVersion: Int { migrations.count }

    /// Brings the database up to `currentVersion`, one transaction per migration.
    static func migrate(_ db: SQLiteConnection) throws {
        let found = Int(try db.scalar("PRAGMA user_version") ?? 0)
        if found > currentVersion {
            throw LibraryError.newerSchema(found: found, known: currentVersion)
        }
        for version in found..<currentVersion {
            try db.transaction(.write(durable: true)) {
                try db.execute(migrations[version])
                try db.execute("PRAGMA user_version = \(version + 1)")
            }
        }
    }
}
